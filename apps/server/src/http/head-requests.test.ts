import { afterAll, beforeAll, expect, it } from 'vitest';
import { exchange } from '../../test/support/raw-http.js';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';

// Review: HEAD on every GET operation answered 405 (RFC 9110 §9.3.2: where GET is, HEAD is too).
forEachDatabase('HEAD requests', ({ storage }) => {
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    ({ key } = await testFeatures(storage()).keys.create('head'));
    server = await startTestServer({ storage: storage() });
  });
  afterAll(() => server.close());

  it('answers HEAD as its GET, with the same status and headers and no body', async () => {
    for (const [path, headers] of [
      ['/healthz', {}],
      ['/v1/scoring/policies/DE', { authorization: `Bearer ${key}` }],
      ['/openapi.json', {}],
    ] as const) {
      const get = await exchange(`${server.url}${path}`, 'GET', headers);
      const head = await exchange(`${server.url}${path}`, 'HEAD', headers);
      expect(get.status, path).toBe(200);
      expect(head.status, path).toBe(200);
      expect(head.body.length, path).toBe(0);
      expect(head.headers['content-type'], path).toBe(get.headers['content-type']);
      expect(head.headers['content-length'], path).toBe(get.headers['content-length']);
    }
  });

  it('refuses HEAD as it refuses GET: without a key, and where GET is not an operation', async () => {
    const unauthenticated = await exchange(`${server.url}/v1/scoring/policies/DE`, 'HEAD');
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.body.length).toBe(0);
    const postOnly = await exchange(`${server.url}/v1/scoring/score`, 'HEAD', {
      authorization: `Bearer ${key}`,
    });
    expect(postOnly.status).toBe(405);
    expect(postOnly.headers.allow).toBe('POST');
    // A path that takes GET lists HEAD beside it.
    const put = await exchange(`${server.url}/v1/scoring/policies/DE`, 'PUT', {
      authorization: `Bearer ${key}`,
    });
    expect(put.status).toBe(405);
    expect(put.headers.allow).toBe('GET, HEAD');
  });

  it('tells the size of a log record with HEAD', async () => {
    const scored = await server.request('/v1/scoring/score', {
      key,
      body: { subject: 'head-size', context: { jurisdiction: 'DE', utilization: 0.3 } },
    });
    const { log_cid } = (await scored.json()) as { log_cid: string };
    const headers = { authorization: `Bearer ${key}` };
    const get = await exchange(`${server.url}/v1/logs/${log_cid}`, 'GET', headers);
    const head = await exchange(`${server.url}/v1/logs/${log_cid}`, 'HEAD', headers);
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    expect(head.headers['content-length']).toBe(String(get.body.length));
  });
});
