import { createHash } from 'node:crypto';
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import type { Request, RequestHandler, Response } from 'express';
import helmet from 'helmet';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';
import { HELMET_OPTIONS, headersSetBy, inlineScriptHashes, securityHeaders } from './security-headers.js';

it('hashes each inline script, and only inline ones', () => {
  const html = '<script>a()</script><script type="module">b()</script><script src="/x.js"></script>';
  const hash = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;
  expect(inlineScriptHashes(html)).toEqual([hash('a()'), hash('b()')]);
});

/** The headers `middleware` leaves on a real Node response. */
function headersOnAResponse(middleware: RequestHandler): Record<string, unknown> {
  const req = new IncomingMessage(new Socket());
  const res = new ServerResponse(req);
  res.setHeader('X-Powered-By', 'Express');
  let passed = false;
  middleware(req as Request, res as unknown as Response, () => {
    passed = true;
  });
  expect(passed).toBe(true);
  return res.getHeaders();
}

it("sets exactly the headers helmet sets, computed once (helmet's X-Powered-By removal aside)", () => {
  const fromHelmet = headersOnAResponse(helmet(HELMET_OPTIONS));
  expect(fromHelmet['x-powered-by']).toBeUndefined();
  const ours = headersOnAResponse(securityHeaders());
  expect(ours['x-powered-by']).toBe('Express');
  delete ours['x-powered-by'];
  expect(ours).toEqual(fromHelmet);
  expect(Object.keys(ours).length).toBeGreaterThan(10);
});

it('refuses a middleware that does not pass the request on at once', () => {
  expect(() => headersSetBy(() => {})).toThrow(/did not pass the request on/);
  expect(() => headersSetBy((_req, _res, next) => next(new Error('no')))).toThrow('no');
});

forEachDatabase('security headers', ({ storage }) => {
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    ({ key } = await testFeatures(storage()).keys.create('headers'));
    server = await startTestServer({ storage: storage() });
  });
  afterAll(() => server.close());

  it('sends nosniff, no X-Powered-By and a CSP fit for the docs on /docs, the API and its errors', async () => {
    const docs = await server.request('/docs');
    const html = await docs.text();
    // The served page shows the configured address (here none: the contract's default), never the built
    // file's placeholder, so the hashes of its scripts are its own.
    expect(html).toContain('http://localhost:3000');
    const docsCsp = docs.headers.get('content-security-policy') ?? '';
    expect(inlineScriptHashes(html).length).toBeGreaterThan(0);
    for (const hash of inlineScriptHashes(html)) expect(docsCsp).toContain(hash);
    for (const response of [
      docs,
      await server.request('/v1/scoring/policies/DE', { key }),
      await server.request('/v1/scoring/policies/DE'),
    ]) {
      expect(response.headers.get('x-powered-by')).toBeNull();
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(response.headers.get('referrer-policy')).toBe('no-referrer');
      const csp = response.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toContain("object-src 'none'");
      expect(csp).not.toContain('unsafe-eval');
      expect(csp).not.toContain('https:');
    }
  });
});
