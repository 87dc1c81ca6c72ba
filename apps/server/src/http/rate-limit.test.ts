import type { Problem } from '@scenario-scoring/api-types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';

const LIMIT = 5;

forEachDatabase('rate limiting', ({ storage }) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ storage: storage(), config: { rateLimitPerSecond: LIMIT } });
  });
  afterAll(() => server.close());

  it('announces the limit on every /v1 response and answers 429 rate_limited past it', async () => {
    const { key } = await testFeatures(storage()).keys.create('limited');
    const responses: Response[] = [];
    for (let i = 0; i < LIMIT + 1; i++)
      responses.push(await server.request('/v1/scoring/policies/DE', { key }));
    const last = responses.pop() as Response;
    for (const [i, response] of responses.entries()) {
      expect(response.status).toBe(200);
      expect(response.headers.get('ratelimit-policy')).toBe(`"default";q=${LIMIT};w=1`);
      expect(response.headers.get('ratelimit')).toMatch(new RegExp(`^"default";r=${LIMIT - 1 - i};t=1$`));
    }
    expect(last.status).toBe(429);
    expect(Number(last.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(last.headers.get('ratelimit')).toMatch(/^"default";r=0;t=1$/);
    const problem = (await last.json()) as Problem;
    expect(problem).toMatchObject({ code: 'rate_limited', status: 429, title: 'Rate limited' });
    expect(problem.detail).toMatch(/5 requests per second/);
  });

  it('counts a log proof as 3 requests, and says so in RateLimit and in the refusal', async () => {
    const { key } = await testFeatures(storage()).keys.create('limited-proofs');
    const proof = '/v1/log/proofs/consistency?from=1&to=2';
    const first = await server.request(proof, { key });
    expect(first.headers.get('ratelimit')).toMatch(new RegExp(`^"default";r=${LIMIT - 3};t=1$`));
    const second = await server.request(proof, { key });
    expect(second.status).toBe(429);
    expect(second.headers.get('ratelimit')).toMatch(/^"default";r=0;t=1$/);
    expect(((await second.json()) as Problem).detail).toMatch(/this operation counts as 3/);
    // A checkpoint counts as one.
    const { key: other } = await testFeatures(storage()).keys.create('limited-checkpoint');
    const checkpoint = await server.request('/v1/log/checkpoint', { key: other });
    expect(checkpoint.headers.get('ratelimit')).toMatch(new RegExp(`^"default";r=${LIMIT - 1};t=1$`));
  });

  it('counts each API key apart', async () => {
    const { key: first } = await testFeatures(storage()).keys.create('limited-a');
    const { key: second } = await testFeatures(storage()).keys.create('limited-b');
    for (let i = 0; i < LIMIT; i++) await server.request('/v1/scoring/policies/DE', { key: first });
    expect((await server.request('/v1/scoring/policies/DE', { key: first })).status).toBe(429);
    expect((await server.request('/v1/scoring/policies/DE', { key: second })).status).toBe(200);
  });

  it('gives the whole allowance again when its one-second window ends', async () => {
    const { key } = await testFeatures(storage()).keys.create('limited-refill');
    for (let i = 0; i < LIMIT; i++) await server.request('/v1/scoring/policies/DE', { key });
    expect((await server.request('/v1/scoring/policies/DE', { key })).status).toBe(429);
    // The window (in memory on SQLite, shared on PostgreSQL) began with the first request and lasts 1 s.
    await new Promise((resolve) => setTimeout(resolve, 1050));
    expect((await server.request('/v1/scoring/policies/DE', { key })).status).toBe(200);
  });

  describe('outside /v1/', () => {
    it('does not limit health checks', async () => {
      for (let i = 0; i < LIMIT * 2; i++) expect((await server.request('/healthz')).status).toBe(200);
    });
  });
});
