import { describe, expect, it } from 'vitest';
import {
  API_KEY,
  BASE_URL,
  jsonResponse,
  networkError,
  problemResponse,
  type Reply,
  recordingSleep,
  SCORE_RESPONSE,
  scriptedFetch,
} from '../test/scripted-fetch.js';
import { createClient } from './client-factory.js';
import type { RetryOptions } from './retry-middleware.js';

const SCORE_BODY = { subject: 'applicant-42', context: { jurisdiction: 'DE' } };
const RUN_BODY = { items: [SCORE_BODY] };
const RUN = {
  id: 'run_01JZ4V8Q6Y3M2N5P7R9S1T3V5X',
  status: 'queued',
  item_count: 1,
  created_at: '2026-01-01T00:00:00Z',
};

/** A client over scripted replies whose waits are recorded instead of slept; jitter is fixed at its middle. */
function clientWith(replies: Reply[], retries: RetryOptions = {}) {
  const { fetch, sent } = scriptedFetch(...replies);
  const { sleep, waits } = recordingSleep();
  const client = createClient({
    baseUrl: BASE_URL,
    apiKey: API_KEY,
    fetch,
    retries: { sleep, random: () => 0.5, ...retries },
  });
  return { client, sent, waits };
}

describe('retries', () => {
  it('when a 429 says Retry-After: 1, then it waits one second and returns the success', async () => {
    const { client, sent, waits } = clientWith([
      problemResponse(429, 'rate_limited', { 'Retry-After': '1' }),
      jsonResponse(SCORE_RESPONSE),
    ]);

    const { data, error } = await client.POST('/v1/scoring/score', { body: SCORE_BODY });

    expect(waits).toEqual([1000]);
    expect(error).toBeUndefined();
    expect(data?.log_cid).toBe(SCORE_RESPONSE.log_cid);
    expect(sent).toHaveLength(2);
  });

  it('re-sends the same body, key and request id on a retry', async () => {
    const { client, sent } = clientWith([
      problemResponse(503, 'service_unavailable', { 'Retry-After': '0' }),
      jsonResponse(SCORE_RESPONSE),
    ]);

    await client.POST('/v1/scoring/score', { body: SCORE_BODY });

    const [first, second] = sent;
    expect(second?.body).toBe(first?.body);
    expect(JSON.parse(second?.body ?? '')).toEqual(SCORE_BODY);
    expect(second?.headers.get('Authorization')).toBe(`Bearer ${API_KEY}`);
    expect(second?.headers.get('X-Request-Id')).toBe(first?.headers.get('X-Request-Id'));
    expect(second?.headers.get('Content-Type')).toBe('application/json');
  });

  it('when Retry-After is an HTTP date, then it waits until that date', async () => {
    const now = Date.parse('2026-03-01T12:00:00Z');
    const { client, waits } = clientWith(
      [
        problemResponse(503, 'service_unavailable', { 'Retry-After': 'Sun, 01 Mar 2026 12:00:07 GMT' }),
        jsonResponse(SCORE_RESPONSE),
      ],
      { now: () => now },
    );

    await client.POST('/v1/scoring/score', { body: SCORE_BODY });

    expect(waits).toEqual([7000]);
  });

  it('when a 503 has no Retry-After, then it backs off exponentially with jitter', async () => {
    const { client, waits } = clientWith(
      [
        problemResponse(503, 'service_unavailable'),
        problemResponse(503, 'service_unavailable'),
        problemResponse(503, 'service_unavailable'),
        jsonResponse(SCORE_RESPONSE),
      ],
      { baseDelayMs: 100 },
    );

    const { data } = await client.POST('/v1/scoring/score', { body: SCORE_BODY });

    // Equal jitter at random 0.5: three quarters of 100, 200 and 400 ms.
    expect(waits).toEqual([75, 150, 300]);
    expect(data?.status).toBe('ok');
  });

  it('when every attempt is rate limited, then it gives up after maxRetries and returns the last problem', async () => {
    const { client, sent, waits } = clientWith([
      problemResponse(429, 'rate_limited', { 'Retry-After': '1' }),
      problemResponse(429, 'rate_limited', { 'Retry-After': '2' }),
      problemResponse(429, 'rate_limited', { 'Retry-After': '3' }),
      problemResponse(429, 'rate_limited', { 'Retry-After': '4' }),
    ]);

    const { data, error, response } = await client.POST('/v1/scoring/score', { body: SCORE_BODY });

    expect(sent).toHaveLength(4);
    expect(waits).toEqual([1000, 2000, 3000]);
    expect(data).toBeUndefined();
    expect(error?.code).toBe('rate_limited');
    expect(response.headers.get('Retry-After')).toBe('4');
  });

  it.each([400, 401, 404, 409, 500, 504])('when the answer is %i, then it does not retry', async (status) => {
    const { client, sent, waits } = clientWith([
      problemResponse(status, 'some_problem'),
      jsonResponse(SCORE_RESPONSE),
    ]);

    const { error } = await client.POST('/v1/scoring/score', { body: SCORE_BODY });

    expect(sent).toHaveLength(1);
    expect(waits).toEqual([]);
    expect(error?.status).toBe(status);
  });

  it('when Retry-After asks for longer than maxDelayMs, then it returns the 429 at once', async () => {
    const { client, sent } = clientWith([problemResponse(429, 'rate_limited', { 'Retry-After': '120' })]);

    const { error } = await client.POST('/v1/scoring/score', { body: SCORE_BODY });

    expect(sent).toHaveLength(1);
    expect(error?.code).toBe('rate_limited');
  });

  it('retries only the statuses of retryOn, and not at all with retries: false', async () => {
    const custom = clientWith([problemResponse(502, 'bad_gateway'), jsonResponse(SCORE_RESPONSE)], {
      retryOn: [502],
    });
    expect((await custom.client.POST('/v1/scoring/score', { body: SCORE_BODY })).data?.status).toBe('ok');

    const { fetch, sent } = scriptedFetch(
      problemResponse(503, 'service_unavailable', { 'Retry-After': '0' }),
    );
    const off = createClient({ baseUrl: BASE_URL, apiKey: API_KEY, fetch, retries: false });
    expect((await off.POST('/v1/scoring/score', { body: SCORE_BODY })).error?.code).toBe(
      'service_unavailable',
    );
    expect(sent).toHaveLength(1);
  });

  it('when a GET meets a network error, then it retries it', async () => {
    const policy = { jurisdiction: 'DE', policy_id: 'DE', policy_version: '2026-11-01' };
    const { client, sent, waits } = clientWith([networkError(), jsonResponse(policy)], { baseDelayMs: 100 });

    const { data } = await client.GET('/v1/scoring/policies/{jurisdiction}', {
      params: { path: { jurisdiction: 'DE' } },
    });

    expect(sent).toHaveLength(2);
    expect(waits).toEqual([75]);
    expect(data?.policy_id).toBe('DE');
  });

  it('when a POST without Idempotency-Key meets a network error, then it throws without retrying', async () => {
    const { client, sent } = clientWith([networkError(), jsonResponse(RUN, 202)]);

    await expect(client.POST('/v1/scoring/runs', { body: RUN_BODY })).rejects.toThrow('fetch failed');
    expect(sent).toHaveLength(1);
  });

  it('when a POST with an Idempotency-Key meets a network error, then it retries it with the same key', async () => {
    const { client, sent } = clientWith([networkError(), jsonResponse(RUN, 202)]);

    const { data } = await client.POST('/v1/scoring/runs', {
      body: RUN_BODY,
      params: { header: { 'Idempotency-Key': 'batch-2026-03-01' } },
    });

    expect(data?.id).toBe(RUN.id);
    expect(sent.map((s) => s.headers.get('Idempotency-Key'))).toEqual([
      'batch-2026-03-01',
      'batch-2026-03-01',
    ]);
    expect(sent[1]?.body).toBe(JSON.stringify(RUN_BODY));
  });

  it('when network errors persist, then it throws the last one after maxRetries', async () => {
    const { client, sent } = clientWith([networkError(), networkError(), new TypeError('last failure')], {
      maxRetries: 2,
    });

    await expect(
      client.GET('/v1/scoring/policies/{jurisdiction}', { params: { path: { jurisdiction: 'DE' } } }),
    ).rejects.toThrow('last failure');
    expect(sent).toHaveLength(3);
  });

  it('when a retried network error ends in a 503, then it keeps counting retries across both', async () => {
    const { client, sent } = clientWith(
      [
        networkError(),
        problemResponse(503, 'service_unavailable'),
        problemResponse(503, 'service_unavailable'),
      ],
      { maxRetries: 2 },
    );

    const { error } = await client.GET('/v1/scoring/policies/{jurisdiction}', {
      params: { path: { jurisdiction: 'DE' } },
    });

    expect(sent).toHaveLength(3);
    expect(error?.code).toBe('service_unavailable');
  });

  it('when the call is aborted during the wait, then it stops and rejects with the abort reason', async () => {
    const { fetch, sent } = scriptedFetch(
      problemResponse(503, 'service_unavailable', { 'Retry-After': '5' }),
    );
    const controller = new AbortController();
    const client = createClient({
      baseUrl: BASE_URL,
      apiKey: API_KEY,
      fetch,
      retries: {
        sleep: async () => {
          controller.abort(new Error('caller gave up'));
          throw controller.signal.reason;
        },
      },
    });

    await expect(
      client.POST('/v1/scoring/score', { body: SCORE_BODY, signal: controller.signal }),
    ).rejects.toThrow('caller gave up');
    expect(sent).toHaveLength(1);
  });

  it('keeps the retry counts of concurrent calls apart', async () => {
    const { fetch, sent } = scriptedFetch(
      problemResponse(503, 'service_unavailable', { 'Retry-After': '0' }),
      problemResponse(503, 'service_unavailable', { 'Retry-After': '0' }),
      jsonResponse(SCORE_RESPONSE),
      jsonResponse(SCORE_RESPONSE),
    );
    const client = createClient({ baseUrl: BASE_URL, apiKey: API_KEY, fetch, retries: { maxRetries: 1 } });

    const results = await Promise.all([
      client.POST('/v1/scoring/score', { body: SCORE_BODY }),
      client.POST('/v1/scoring/score', { body: SCORE_BODY }),
    ]);

    expect(results.map((r) => r.data?.status)).toEqual(['ok', 'ok']);
    expect(sent).toHaveLength(4);
  });
});

describe('retries of thrown errors', () => {
  it('when fetch throws something other than a network error, then it is not retried', async () => {
    const { client, sent } = clientWith([new RangeError('a bug in a custom fetch'), jsonResponse({})]);

    await expect(
      client.GET('/v1/scoring/policies/{jurisdiction}', { params: { path: { jurisdiction: 'DE' } } }),
    ).rejects.toThrow(RangeError);
    expect(sent).toHaveLength(1);
  });
});
