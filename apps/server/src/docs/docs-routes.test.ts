import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, forEachDatabase, type TestDatabase } from '../../test/support/test-databases.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';
import { openStorage, type Storage } from '../storage/storage.js';

/** A raw GET or HEAD (fetch cannot set `Host`): status, headers and the body's bytes. */
function rawRequest(
  url: string,
  headers: Record<string, string>,
  method = 'GET',
): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    request(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
      );
    })
      .on('error', reject)
      .end();
  });
}

forEachDatabase('the published contract', ({ storage }) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ storage: storage() });
  });
  afterAll(() => server.close());

  it('serves the reference, with the error guide that problem types link to, at /docs', async () => {
    const response = await server.request('/docs');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await response.text();
    expect(html).toContain('scenario-scoring');
    expect(html).toContain('idempotency_key_reused');
  });

  it('serves the bundled contract as /openapi.json and /openapi.yaml', async () => {
    const json = await server.request('/openapi.json');
    expect(json.headers.get('content-type')).toMatch(/^application\/json/);
    const document = (await json.json()) as { openapi: string; paths: Record<string, unknown> };
    expect(document.openapi).toBe('3.1.0');
    expect(document.paths).toHaveProperty('/v1/scoring/score');

    const yaml = await server.request('/openapi.yaml');
    expect(yaml.headers.get('content-type')).toMatch(/^application\/yaml/);
    expect(await yaml.text()).toMatch(/^openapi: 3\.1\.0/);
  });

  it('are found as Express routes are: in any case and with a trailing slash, and nothing else is', async () => {
    for (const path of ['/DOCS', '/docs/', '/OpenAPI.json/']) {
      expect((await server.request(path)).status, path).toBe(200);
    }
    for (const path of ['/docsx', '/docs//', '/xdocs']) {
      expect((await server.request(path)).status, path).toBe(404);
    }
  });

  it('refuses to be written to, with 405 and Allow', async () => {
    const response = await server.request('/openapi.json', { method: 'PUT', body: {} });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET, HEAD');
  });

  it('show the contract default address without PUBLIC_BASE_URL, never {base_url}', async () => {
    const html = await (await server.request('/docs')).text();
    expect(html).not.toContain('{base_url}');
    expect(html).toContain('"servers":[{"url":"http://localhost:3000"');
  });

  it('are sent gzipped when asked, with an ETag that answers 304, and no-cache', async () => {
    const url = `${server.url}/docs`;
    const { request } = await import('node:http');
    const raw = await new Promise<{ status: number; headers: Record<string, unknown>; bytes: number }>(
      (resolve, reject) => {
        request(url, { headers: { 'accept-encoding': 'gzip' } }, (res) => {
          let bytes = 0;
          res.on('data', (chunk: Buffer) => {
            bytes += chunk.length;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, bytes }));
        })
          .on('error', reject)
          .end();
      },
    );
    expect(raw.status).toBe(200);
    expect(raw.headers['content-encoding']).toBe('gzip');
    expect(raw.headers['cache-control']).toBe('no-cache');
    // 2.7 MB of HTML compresses to well under a megabyte.
    expect(raw.bytes).toBeLessThan(1_000_000);
    const again = await fetch(url, { headers: { 'if-none-match': String(raw.headers.etag) } });
    expect(again.status).toBe(304);
    // The identity representation has a tag of its own (RFC 9110 §8.8.3), and tags compare weakly.
    const identity = await fetch(url, { headers: { 'accept-encoding': 'identity' } });
    const identityTag = String(identity.headers.get('etag'));
    expect(identityTag).not.toBe(String(raw.headers.etag));
    for (const ifNoneMatch of [identityTag, `W/${identityTag}`, `"other", ${identityTag}`, '*']) {
      const cached = await fetch(url, {
        headers: { 'accept-encoding': 'identity', 'if-none-match': ifNoneMatch },
      });
      expect(cached.status, ifNoneMatch).toBe(304);
    }
    const stale = await fetch(url, {
      headers: { 'accept-encoding': 'identity', 'if-none-match': '"other"' },
    });
    expect(stale.status).toBe(200);
  });

  it('do not echo a Host header that is not a plain host', async () => {
    const { request } = await import('node:http');
    const html = await new Promise<string>((resolve, reject) => {
      request(`${server.url}/docs`, { headers: { host: 'evil.test"><script>' } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve(text));
      })
        .on('error', reject)
        .end();
    });
    expect(html).not.toContain('evil.test');
    expect(html).toContain('"servers":[{"url":"http://localhost:3000"');
  });
});

forEachDatabase('the published contract, built once', ({ storage }) => {
  const PUBLIC = 'https://scoring.example.com/api';
  let server: TestServer;
  const builds: string[] = [];
  beforeAll(async () => {
    server = await startTestServer({
      storage: storage(),
      config: { publicBaseUrl: PUBLIC },
      onDocsPrepare: (path, representation) => builds.push(`${path} ${representation}`),
    });
  });
  afterAll(() => server.close());

  it('is one page for every Host: the same bytes and ETag, made once, gzipped only when asked', async () => {
    const url = `${server.url}/docs`;
    const answers = [];
    for (let i = 0; i < 40; i++) {
      const host = `h${i}.example`;
      answers.push(await rawRequest(url, { host, 'accept-encoding': 'identity' }));
      await rawRequest(url, { host }, 'HEAD');
    }
    const first = answers[0];
    expect(first?.status).toBe(200);
    expect(new Set(answers.map((answer) => answer.headers.etag)).size).toBe(1);
    expect(new Set(answers.map((answer) => answer.headers['content-security-policy'])).size).toBe(1);
    for (const answer of answers) {
      expect(answer.body.equals(first?.body ?? Buffer.alloc(0))).toBe(true);
      // The answer no longer depends on Host, so caches need not key on it.
      expect(answer.headers.vary).toBe('Accept-Encoding');
    }
    const html = first?.body.toString('utf8') ?? '';
    expect(html).toContain(`"servers":[{"url":"${PUBLIC}"`);
    expect(html).not.toContain('h0.example');
    expect(html).not.toContain('http://localhost:3000');
    // Built once, and no gzip was made: nobody asked for one.
    expect(builds).toEqual(['/docs identity']);

    for (let i = 0; i < 10; i++) {
      const gzipped = await rawRequest(url, { host: `g${i}.example`, 'accept-encoding': 'gzip' });
      expect(gzipped.headers['content-encoding']).toBe('gzip');
      expect(gunzipSync(gzipped.body).equals(first?.body ?? Buffer.alloc(0))).toBe(true);
    }
    expect(builds).toEqual(['/docs identity', '/docs gzip']);
  });
});

describe('requests without an API key', () => {
  let database: TestDatabase;
  let storage: Storage;
  let server: TestServer;
  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
    storage = await openStorage(database.options);
    server = await startTestServer({ storage, config: { anonymousRateLimitPerSecond: 5 } });
  });
  afterAll(async () => {
    await server.close();
    await storage.close();
    await database.dispose();
  });

  it('are limited per client address: past the limit, 429 rate_limited with Retry-After', async () => {
    for (const path of ['/docs', '/log/verifier-key', '/openapi.json', '/nothing-here']) {
      // A fresh window (one second from the first request counted in it): the limit counts every path together.
      await new Promise((resolve) => setTimeout(resolve, 1100));
      const statuses: number[] = [];
      let refused: Response | undefined;
      for (let i = 0; i < 8; i++) {
        const response = await server.request(path, { method: 'HEAD' });
        statuses.push(response.status);
        if (response.status === 429) refused ??= response;
      }
      expect(statuses.slice(0, 5), path).not.toContain(429);
      expect(statuses.slice(5), path).toContain(429);
      expect(refused?.headers.get('retry-after'), path).toBe('1');
      const problem = await (await server.request(path)).json();
      expect(problem, path).toMatchObject({ status: 429, code: 'rate_limited' });
    }
  });

  it('leave the probes and the API alone', async () => {
    for (let i = 0; i < 20; i++) {
      expect((await server.request('/healthz')).status).toBe(200);
      expect((await server.request('/readyz')).status).toBe(200);
      // Under /v1/ the key decides (here: there is none).
      expect((await server.request('/v1/log/checkpoint')).status).toBe(401);
    }
  });
});
