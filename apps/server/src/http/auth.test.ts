import type { Problem } from '@scenario-scoring/api-types';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';

forEachDatabase('API key authentication', ({ storage }) => {
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    server = await startTestServer({ storage: storage() });
    ({ key } = await testFeatures(storage()).keys.create('auth'));
  });
  afterAll(() => server.close());

  const expectUnauthorized = async (response: Response, code: string, detail: RegExp) => {
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="scenario-scoring"');
    const problem = (await response.json()) as Problem;
    expect(problem).toMatchObject({ code, status: 401, type: `/docs#section/errors/${code}` });
    expect(problem.detail).toMatch(detail);
  };

  it('refuses a request without a key with 401 missing_api_key', async () => {
    await expectUnauthorized(
      await server.request('/v1/scoring/policies/DE'),
      'missing_api_key',
      /Bearer sk_/,
    );
  });

  it('refuses another scheme, or Bearer without a key, as missing', async () => {
    const basic = await server.request('/v1/scoring/policies/DE', {
      headers: { authorization: 'Basic dXNlcjpwdw==' },
    });
    await expectUnauthorized(basic, 'missing_api_key', /Bearer sk_/);
    const empty = await server.request('/v1/scoring/policies/DE', { headers: { authorization: 'Bearer ' } });
    await expectUnauthorized(empty, 'missing_api_key', /Bearer sk_/);
  });

  it('refuses an unknown, malformed or altered key with 401 invalid_api_key', async () => {
    for (const wrong of [
      `sk_${'A'.repeat(40)}`,
      'not-a-key',
      `${key.slice(0, -1)}${key.endsWith('x') ? 'y' : 'x'}`,
      `${key} extra`,
    ]) {
      await expectUnauthorized(
        await server.request('/v1/scoring/policies/DE', { key: wrong }),
        'invalid_api_key',
        /not valid/,
      );
    }
  });

  it('accepts a valid key, whatever the case of the scheme', async () => {
    expect((await server.request('/v1/scoring/policies/DE', { key })).status).toBe(200);
    const lower = await server.request('/v1/scoring/policies/DE', {
      headers: { authorization: `bearer ${key}` },
    });
    expect(lower.status).toBe(200);
  });

  it('authenticates before reading the body, so an anonymous client learns nothing about it', async () => {
    const response = await server.request('/v1/scoring/score', { body: '{not json' });
    expect(response.status).toBe(401);
  });

  it('needs no key outside /v1/', async () => {
    for (const path of ['/healthz', '/readyz', '/docs', '/openapi.json', '/openapi.yaml']) {
      expect((await server.request(path)).status).toBe(200);
    }
  });

  it('answers 429 rate_limited, without a lookup, to an address that sent too many unknown keys, while a key found before still passes', async () => {
    // The address's own allowance, then the half of the instance's it may borrow: a flood is refused
    // once it outruns both (auth-limits.test.ts checks the counts on a fake clock).
    expect((await server.request('/v1/scoring/policies/DE', { key })).status).toBe(200);
    // At once, so the allowances cannot refill in between (each is taken before its lookup).
    const responses = await Promise.all(
      Array.from({ length: 300 }, (_, n) =>
        server.request('/v1/scoring/policies/DE', { key: `sk_${String(n).padStart(40, 'Z')}` }),
      ),
    );
    let limited: Response | undefined;
    for (const response of responses) {
      if (response.status === 429) limited ??= response;
      else await expectUnauthorized(response, 'invalid_api_key', /not valid/);
    }
    if (limited === undefined) throw new Error('300 unknown keys at once were all looked up');
    expect(limited.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    const problem = (await limited.json()) as Problem;
    expect(problem).toMatchObject({ status: 429, code: 'rate_limited' });
    expect(problem.detail).toMatch(/unknown API keys from this address \(at most 20 a second\)/);
    // The key found before is cached: it still passes from the same address.
    expect((await server.request('/v1/scoring/policies/DE', { key })).status).toBe(200);
  });
});
