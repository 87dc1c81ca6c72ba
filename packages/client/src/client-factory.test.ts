import { readFile } from 'node:fs/promises';
import type { Middleware } from 'openapi-fetch';
import { describe, expect, it } from 'vitest';
import {
  API_KEY,
  BASE_URL,
  jsonResponse,
  networkError,
  problemResponse,
  recordingSleep,
  SCORE_RESPONSE,
  scriptedFetch,
} from '../test/scripted-fetch.js';
import { createClient, DEFAULT_USER_AGENT } from './client-factory.js';
import { CLIENT_VERSION } from './client-version.js';

const SCORE_BODY = { subject: 'applicant-42', context: { jurisdiction: 'DE' } };

describe('createClient', () => {
  it('sends the API key as a bearer token on every request', async () => {
    const { fetch, sent } = scriptedFetch(jsonResponse(SCORE_RESPONSE));
    const client = createClient({ baseUrl: BASE_URL, apiKey: API_KEY, fetch });

    await client.POST('/v1/scoring/score', { body: SCORE_BODY });

    expect(sent[0]?.headers.get('Authorization')).toBe(`Bearer ${API_KEY}`);
    expect(sent[0]?.url).toBe('https://api.test/v1/scoring/score');
    expect(JSON.parse(sent[0]?.body ?? '')).toEqual(SCORE_BODY);
  });

  it('keeps an Authorization header that the call sets itself', async () => {
    const other = `sk_${'Z'.repeat(40)}`;
    const { fetch, sent } = scriptedFetch(jsonResponse(SCORE_RESPONSE));
    const client = createClient({ baseUrl: BASE_URL, apiKey: API_KEY, fetch });

    await client.POST('/v1/scoring/score', {
      body: SCORE_BODY,
      headers: { Authorization: `Bearer ${other}` },
    });

    expect(sent[0]?.headers.get('Authorization')).toBe(`Bearer ${other}`);
  });

  it.each([
    ['an empty string', ''],
    ['a key without the sk_ prefix', 'a'.repeat(40)],
    ['a key that is too short', `sk_${'a'.repeat(31)}`],
    ['a key with a character outside base62', `sk_${'a'.repeat(39)}-`],
    ['a publishable-looking key', `pk_${'a'.repeat(40)}`],
    ['undefined', undefined],
  ])('throws a TypeError for %s as apiKey, without repeating it', (_, apiKey) => {
    const create = () => createClient({ baseUrl: BASE_URL, apiKey: apiKey as string });
    expect(create).toThrow(TypeError);
    expect(create).toThrow(/apiKey must be an API key/);
    if (apiKey) expect(create).not.toThrow(apiKey);
  });

  it('accepts a key of sk_ and exactly 32 base62 characters', () => {
    expect(() => createClient({ baseUrl: BASE_URL, apiKey: `sk_${'9'.repeat(32)}` })).not.toThrow();
  });

  it('throws a TypeError for a baseUrl that is not an address', () => {
    expect(() => createClient({ baseUrl: 'not a url', apiKey: API_KEY })).toThrow(TypeError);
    expect(() => createClient({ baseUrl: 42 as unknown as string, apiKey: API_KEY })).toThrow(/baseUrl/);
  });

  it('gives each request a fresh X-Request-Id when the caller sets none', async () => {
    const { fetch, sent } = scriptedFetch(jsonResponse(SCORE_RESPONSE), jsonResponse(SCORE_RESPONSE));
    const client = createClient({ baseUrl: BASE_URL, apiKey: API_KEY, fetch });

    await client.POST('/v1/scoring/score', { body: SCORE_BODY });
    await client.POST('/v1/scoring/score', { body: SCORE_BODY });

    const [first, second] = sent.map((s) => s.headers.get('X-Request-Id'));
    expect(first).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(first).toMatch(/^[A-Za-z0-9._:-]{1,128}$/);
    expect(second).not.toBe(first);
  });

  it("keeps the caller's X-Request-Id, and uses the requestId option otherwise", async () => {
    const { fetch, sent } = scriptedFetch(jsonResponse(SCORE_RESPONSE), jsonResponse(SCORE_RESPONSE));
    const client = createClient({ baseUrl: BASE_URL, apiKey: API_KEY, fetch, requestId: () => 'trace:7' });

    await client.POST('/v1/scoring/score', {
      body: SCORE_BODY,
      params: { header: { 'X-Request-Id': 'mine-1' } },
    });
    await client.POST('/v1/scoring/score', { body: SCORE_BODY });

    expect(sent.map((s) => s.headers.get('X-Request-Id'))).toEqual(['mine-1', 'trace:7']);
  });

  it('sends a User-Agent naming the client and its version, and the headers option', async () => {
    const { fetch, sent } = scriptedFetch(jsonResponse(SCORE_RESPONSE), jsonResponse(SCORE_RESPONSE));
    const plain = createClient({ baseUrl: BASE_URL, apiKey: API_KEY, fetch });
    const custom = createClient({
      baseUrl: BASE_URL,
      apiKey: API_KEY,
      fetch,
      userAgent: 'acme-batch/2.1',
      headers: { 'X-Tenant-Note': 'nightly' },
    });

    await plain.POST('/v1/scoring/score', { body: SCORE_BODY });
    await custom.POST('/v1/scoring/score', { body: SCORE_BODY });

    expect(sent[0]?.headers.get('User-Agent')).toBe(DEFAULT_USER_AGENT);
    expect(sent[1]?.headers.get('User-Agent')).toBe('acme-batch/2.1');
    expect(sent[1]?.headers.get('X-Tenant-Note')).toBe('nightly');
  });

  it('states the version of package.json', async () => {
    const manifest = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8'));
    expect(CLIENT_VERSION).toBe(manifest.version);
    expect(DEFAULT_USER_AGENT).toBe(`scenario-scoring-client/${manifest.version}`);
  });

  it('returns data on success and the problem as error on failure, without throwing', async () => {
    const { fetch } = scriptedFetch(jsonResponse(SCORE_RESPONSE), problemResponse(400, 'validation_failed'));
    const client = createClient({ baseUrl: BASE_URL, apiKey: API_KEY, fetch });

    const ok = await client.POST('/v1/scoring/score', { body: SCORE_BODY });
    const failed = await client.POST('/v1/scoring/score', { body: SCORE_BODY });

    expect(ok.data?.result.scenarios[1]?.score).toBe(688);
    expect(ok.error).toBeUndefined();
    expect(failed.data).toBeUndefined();
    expect(failed.error?.code).toBe('validation_failed');
    expect(failed.response.status).toBe(400);
  });

  describe('middleware option', () => {
    /** A middleware that records what it sees, and tags each attempt's request. */
    function recorder() {
      const seen: string[] = [];
      let attempt = 0;
      const middleware: Middleware = {
        onRequest({ request }) {
          attempt += 1;
          seen.push(`request ${request.headers.has('Authorization') && request.headers.has('X-Request-Id')}`);
          const tagged = new Request(request);
          tagged.headers.set('X-Attempt', String(attempt));
          return tagged;
        },
        onResponse({ response }) {
          seen.push(`response ${response.status}`);
        },
        onError({ error }) {
          seen.push(`error ${(error as Error).message}`);
        },
      };
      return { seen, middleware };
    }

    it("runs the caller's middleware around every attempt, retries included, after the client's headers", async () => {
      const { fetch, sent } = scriptedFetch(
        problemResponse(503, 'service_unavailable'),
        jsonResponse(SCORE_RESPONSE),
      );
      const { seen, middleware } = recorder();
      const { sleep } = recordingSleep();
      const client = createClient({
        baseUrl: BASE_URL,
        apiKey: API_KEY,
        fetch,
        retries: { sleep, random: () => 0 },
        middleware: [middleware],
      });

      const { data } = await client.POST('/v1/scoring/score', { body: SCORE_BODY });

      expect(data?.log_cid).toBe(SCORE_RESPONSE.log_cid);
      expect(seen).toEqual(['request true', 'response 503', 'request true', 'response 200']);
      expect(sent.map((request) => request.headers.get('X-Attempt'))).toEqual(['1', '2']);
      expect(JSON.parse(sent[1]?.body ?? '')).toEqual(SCORE_BODY);
    });

    it('shows it each network error of a retried GET', async () => {
      const { fetch } = scriptedFetch(networkError(), jsonResponse({ data: [], next_cursor: null }));
      const { seen, middleware } = recorder();
      const { sleep } = recordingSleep();
      const client = createClient({
        baseUrl: BASE_URL,
        apiKey: API_KEY,
        fetch,
        retries: { sleep },
        middleware: [middleware],
      });

      const { response } = await client.GET('/v1/webhooks');

      expect(response.status).toBe(200);
      expect(seen).toEqual(['request true', 'error fetch failed', 'request true', 'response 200']);
    });

    it('installs it without retries too, and refuses what is not middleware', async () => {
      const { fetch, sent } = scriptedFetch(jsonResponse(SCORE_RESPONSE));
      const { seen, middleware } = recorder();
      const client = createClient({
        baseUrl: BASE_URL,
        apiKey: API_KEY,
        fetch,
        retries: false,
        middleware: [middleware],
      });
      await client.POST('/v1/scoring/score', { body: SCORE_BODY });
      expect(seen).toEqual(['request true', 'response 200']);
      expect(sent[0]?.headers.get('X-Attempt')).toBe('1');
      expect(() =>
        createClient({ baseUrl: BASE_URL, apiKey: API_KEY, middleware: [() => undefined] as never }),
      ).toThrow(TypeError);
    });

    it('client.use, by contrast, sees the first attempt only (as the README says)', async () => {
      const { fetch } = scriptedFetch(
        problemResponse(503, 'service_unavailable'),
        jsonResponse(SCORE_RESPONSE),
      );
      const { seen, middleware } = recorder();
      const { sleep } = recordingSleep();
      const client = createClient({ baseUrl: BASE_URL, apiKey: API_KEY, fetch, retries: { sleep } });
      client.use(middleware);
      const { data } = await client.POST('/v1/scoring/score', { body: SCORE_BODY });
      expect(data).toBeDefined();
      expect(seen).toEqual(['request true', 'response 503']);
    });
  });
});
