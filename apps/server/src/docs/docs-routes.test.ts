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

  it('refuses to be written to, with 405 and Allow', async () => {
    const response = await server.request('/openapi.json', { method: 'PUT', body: {} });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET, HEAD');
  });
});
