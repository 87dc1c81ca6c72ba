import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawExchange } from '../../test/support/raw-http.js';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';
import { originFormTarget } from './request-target.js';

describe('originFormTarget', () => {
  it('leaves a path alone, and takes the path and query of an absolute-form target', () => {
    expect(originFormTarget('/v1/log?x=1')).toEqual({ target: '/v1/log?x=1' });
    expect(originFormTarget('http://example.com/healthz')).toEqual({ target: '/healthz' });
    expect(originFormTarget('HTTPS://example.com:8443/v1/x?y=2')).toEqual({ target: '/v1/x?y=2' });
    expect(originFormTarget('http://example.com')).toEqual({ target: '/' });
    expect(originFormTarget('http://example.com?q')).toEqual({ target: '/?q' });
  });

  it('marks a fragment and anything that is not a path', () => {
    expect(originFormTarget('/healthz#x')).toMatchObject({ target: '/healthz', problem: expect.any(String) });
    expect(originFormTarget('#')).toMatchObject({ target: '/', problem: expect.any(String) });
    expect(originFormTarget('*')).toMatchObject({ target: '/', problem: expect.any(String) });
  });
});

/** Sends `requestLine` with a Host header on a raw socket; resolves with the whole answer. */
function raw(url: string, requestLine: string): Promise<string> {
  return rawExchange(url, `${requestLine}\r\nHost: ${new URL(url).host}\r\nConnection: close\r\n\r\n`);
}

forEachDatabase('request targets', ({ storage }) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ storage: storage() });
  });
  afterAll(() => server.close());

  it('answers an absolute-form target as its path', async () => {
    const answer = await raw(server.url, 'GET http://127.0.0.1/healthz HTTP/1.1');
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('refuses a fragment or a target that is not a path with 400 malformed_request, not a 404', async () => {
    for (const line of ['GET /healthz#x HTTP/1.1', 'GET /v1/log#/x HTTP/1.1', 'OPTIONS * HTTP/1.1']) {
      const answer = await raw(server.url, line);
      expect(answer, line).toMatch(/^HTTP\/1\.1 400 /);
      expect(answer, line).toContain('application/problem+json');
      const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
      expect(body, line).toMatchObject({ status: 400, code: 'malformed_request' });
      expect(String(body.detail)).not.toContain('No operation');
    }
  });
});
