import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';

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
    expect(html).toContain('not_implemented');
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

  it('show the address of the server that serves them, never {base_url}', async () => {
    const response = await server.request('/docs');
    const html = await response.text();
    const origin = new URL(server.url).origin;
    expect(html).not.toContain('{base_url}');
    expect(html).toContain(`"servers":[{"url":"${origin}"`);
    expect(html).not.toContain('http://localhost:3000');
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
