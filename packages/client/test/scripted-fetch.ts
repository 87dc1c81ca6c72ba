/**
 * A fetch for tests: answers each call with the next scripted reply (a Response, or an Error to throw)
 * and records what was sent, body included. It is passed to createClient, so no global is touched.
 */
/** One request as the scripted fetch received it. */
export interface SentRequest {
  method: string;
  url: string;
  headers: Headers;
  body: string;
}

/** A scripted reply: a response, a response made on demand, or an error to throw. */
export type Reply = Response | Error | (() => Response);

/** A fetch answering with `replies` in turn, and the list of requests it received. */
export function scriptedFetch(...replies: Reply[]) {
  const sent: SentRequest[] = [];
  const fetch = async (request: Request): Promise<Response> => {
    sent.push({
      method: request.method,
      url: request.url,
      headers: new Headers(request.headers),
      body: await request.text(),
    });
    const reply = replies.shift();
    if (reply === undefined) throw new Error(`scriptedFetch: no reply left for call ${sent.length}`);
    if (reply instanceof Error) throw reply;
    return typeof reply === 'function' ? reply() : reply;
  };
  return { fetch, sent };
}

/** A problem+json response, as the server writes them. */
export function problemResponse(
  status: number,
  code: string,
  headers: Record<string, string> = {},
): Response {
  const body = {
    type: `/docs#section/errors/${code}`,
    title: code,
    status,
    detail: `A ${code} problem.`,
    code,
    request_id: 'req_01JZ4V8Q6Y3M2N5P7R9S1T3V5X',
  };
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/problem+json', ...headers },
  });
}

/** A JSON response. */
export function jsonResponse(body: unknown, status = 200): Response {
  return Response.json(body, { status });
}

/** A fake sleep that records each wait and returns at once. */
export function recordingSleep() {
  const waits: number[] = [];
  const sleep = async (ms: number) => {
    waits.push(ms);
  };
  return { sleep, waits };
}

/** A network failure, as fetch reports one. */
export function networkError(): TypeError {
  return new TypeError('fetch failed', { cause: new Error('ECONNRESET') });
}

/** A well-formed API key and a base address for tests. */
export const API_KEY = `sk_${'a1B2c3D4e5'.repeat(4)}`;
export const BASE_URL = 'https://api.test';

/** A score response shaped like the contract's example. */
export const SCORE_RESPONSE = {
  id: 'req_01JZ4V8Q6Y3M2N5P7R9S1T3V5X',
  status: 'ok',
  result: {
    scenarios: [
      { name: 'p10', score: 612, explain: [] },
      { name: 'p50', score: 688, explain: [] },
      { name: 'p90', score: 741, explain: [] },
    ],
    levers: [],
  },
  log_cid: 'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e',
};
