import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, SCORE_RESPONSE } from '../test/scripted-fetch.js';
import { createClient } from './client-factory.js';
import { computeLogCid } from './log-record-verifier.js';
import { fetchVerifiedLogRecord } from './verified-log-fetch.js';

/** What the real server received, per request. */
const received: { url: string; headers: IncomingMessage['headers']; body: string }[] = [];
const LOG_BYTES = Buffer.from('{"context":{"jurisdiction":"DE"},"subject":"applicant-42"}');
let scoreCalls = 0;

async function handle(req: IncomingMessage, res: ServerResponse) {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  received.push({ url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
  if (req.url === '/v1/scoring/score') {
    scoreCalls += 1;
    if (scoreCalls === 1) {
      res.writeHead(503, { 'Content-Type': 'application/problem+json', 'Retry-After': '0' });
      res.end(
        JSON.stringify({
          type: '/docs',
          title: 'Service unavailable',
          status: 503,
          detail: 'Starting.',
          code: 'service_unavailable',
        }),
      );
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(SCORE_RESPONSE));
    return;
  }
  if (req.url?.startsWith('/v1/logs/')) {
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(LOG_BYTES);
    return;
  }
  res.writeHead(404).end();
}

let baseUrl = '';
const server = createServer((req, res) => void handle(req, res));
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('over real HTTP with the global fetch', () => {
  it('when the server answers 503 once, then the retry re-sends the same request and succeeds', async () => {
    const client = createClient({ baseUrl, apiKey: API_KEY });
    const body = { subject: 'applicant-42', context: { jurisdiction: 'DE' } };

    const { data, error } = await client.POST('/v1/scoring/score', { body });

    expect(error).toBeUndefined();
    expect(data?.result.scenarios).toHaveLength(3);
    const [first, second] = received.filter((r) => r.url === '/v1/scoring/score');
    expect(second?.body).toBe(JSON.stringify(body));
    expect(second?.body).toBe(first?.body);
    expect(second?.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(second?.headers['x-request-id']).toBe(first?.headers['x-request-id']);
  });

  it('fetches a log record as its exact bytes and verifies them', async () => {
    const client = createClient({ baseUrl, apiKey: API_KEY });
    const cid = await computeLogCid(LOG_BYTES);

    const { data, error } = await fetchVerifiedLogRecord(client, cid);

    expect(error).toBeUndefined();
    expect(Buffer.from(data?.bytes ?? []).equals(LOG_BYTES)).toBe(true);
    expect(data?.record.subject).toBe('applicant-42');
  });
});
