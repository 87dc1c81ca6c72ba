/**
 * The shipped nginx example (deploy/nginx/scenario-scoring.conf) in front of the built server: the hostile
 * cases nginx answers itself never reach the server, the ones only the server can judge pass through and
 * get the server's problem, and a normal scoring works with the proxy's X-Forwarded-For. What reached the
 * server is read off a TCP tap between the two (test/support/nginx-proxy.ts).
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BuiltServer, databaseEnv, requireBuiltServer } from './support/built-server.js';
import { type NginxProxy, startNginxProxy } from './support/nginx-proxy.js';
import { rawExchange } from './support/raw-http.js';
import { createTestDatabase, type TestDatabase } from './support/test-databases.js';

const SCORE_BODY = JSON.stringify({ subject: 'applicant-0001', context: { jurisdiction: 'DE' } });
/** The example's client_max_body_size, the server's default BODY_LIMIT_BYTES. */
const LIMIT = 1024 * 1024;
/** The example's client_header_timeout. */
const HEADER_TIMEOUT_MS = 10_000;

let database: TestDatabase;
let server: BuiltServer;
let proxy: NginxProxy;
let key: string;

beforeAll(async () => {
  requireBuiltServer();
  database = await createTestDatabase('sqlite');
  // As deploy/README.md says: the proxy (here on loopback) is trusted for the client's address.
  server = new BuiltServer({ ...databaseEnv(database), TRUSTED_PROXIES: '127.0.0.1' });
  await server.waitUntilReady();
  key = server.firstKey() as string;
  proxy = await startNginxProxy(Number(new URL(await server.baseUrl()).port));
}, 30_000);

afterAll(async () => {
  await proxy?.stop();
  await server?.stop();
  await database?.dispose();
});

/** A raw HTTP/1.1 request through the proxy, marked with `X-Test-Case: <marker>` to find it upstream. */
function raw(marker: string, head: string[], body = ''): Promise<string> {
  return rawExchange(
    proxy.url,
    [...head, `X-Test-Case: ${marker}`, 'Connection: close', '', ''].join('\r\n') + body,
  );
}

/** The status and the problem of a raw answer (a problem+json body). */
function parsed(answer: string): { status: number; problem: Record<string, unknown> } {
  const [head = '', body = ''] = answer.split('\r\n\r\n');
  return {
    status: Number(head.split(' ')[1]),
    problem: JSON.parse(body.trim()) as Record<string, unknown>,
  };
}

describe.concurrent('the nginx example in front of the server', () => {
  it('passes a scoring on, setting X-Forwarded-For to the client it sees (not what the client claims)', async () => {
    const response = await fetch(`${proxy.url}/v1/scoring/score`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'x-forwarded-for': '203.0.113.9',
        'x-test-case': 'score',
      },
      body: SCORE_BODY,
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ log_cid: expect.any(String) });
    const head = proxy.upstreamHead('X-Test-Case: score') ?? proxy.upstreamHead('x-test-case: score');
    expect(head).toMatch(/^POST \/v1\/scoring\/score HTTP\/1\.1\r\n/);
    expect(head).toMatch(/\r\nX-Forwarded-For: 127\.0\.0\.1\r\n/);
    expect(head).not.toContain('203.0.113.9');
  });

  it('answers a body declared over the limit 413 itself, as a problem, without asking the server', async () => {
    const body = 'x'.repeat(LIMIT + 1);
    const answer = await raw(
      'declared-oversize',
      [
        'POST /v1/scoring/score HTTP/1.1',
        'Host: api.example',
        `Authorization: Bearer ${key}`,
        'Content-Type: application/json',
        `Content-Length: ${body.length}`,
      ],
      body,
    );
    const { status, problem } = parsed(answer);
    expect(status).toBe(413);
    expect(problem).toMatchObject({ status: 413, code: 'payload_too_large' });
    expect(proxy.upstream()).not.toContain('declared-oversize');
  });

  it('answers a chunked body 413 once it passes the limit, without asking the server', async () => {
    const chunk = 'x'.repeat(64 * 1024);
    const chunks = Array.from({ length: 24 }, () => `${chunk.length.toString(16)}\r\n${chunk}\r\n`).join('');
    const answer = await raw(
      'chunked-oversize',
      [
        'POST /v1/scoring/score HTTP/1.1',
        'Host: api.example',
        `Authorization: Bearer ${key}`,
        'Content-Type: application/json',
        'Transfer-Encoding: chunked',
      ],
      `${chunks}0\r\n\r\n`,
    );
    const { status, problem } = parsed(answer);
    expect(status).toBe(413);
    expect(problem).toMatchObject({ code: 'payload_too_large' });
    expect(proxy.upstream()).not.toContain('chunked-oversize');
  });

  it('refuses a request with two Host headers, or none, 400 itself', async () => {
    const twice = await raw('two-hosts', ['GET /healthz HTTP/1.1', 'Host: a.example', 'Host: b.example']);
    expect(parsed(twice)).toMatchObject({ status: 400, problem: { code: 'malformed_request' } });
    const none = await raw('no-host', ['GET /healthz HTTP/1.1']);
    expect(parsed(none)).toMatchObject({ status: 400, problem: { code: 'malformed_request' } });
    expect(proxy.upstream()).not.toContain('two-hosts');
    expect(proxy.upstream()).not.toContain('no-host');
  });

  it('refuses headers over its buffers 431 itself', async () => {
    const answer = await raw('large-header', [
      'GET /healthz HTTP/1.1',
      'Host: api.example',
      `X-Large: ${'h'.repeat(9000)}`,
    ]);
    expect(parsed(answer)).toMatchObject({ status: 431, problem: { code: 'headers_too_large' } });
    expect(proxy.upstream()).not.toContain('large-header');
  });

  it('passes an Expect other than 100-continue on, and the server answers 417', async () => {
    const answer = await raw(
      'expect',
      [
        'POST /v1/scoring/score HTTP/1.1',
        'Host: api.example',
        `Authorization: Bearer ${key}`,
        'Content-Type: application/json',
        'Expect: x-magic',
        `Content-Length: ${SCORE_BODY.length}`,
      ],
      SCORE_BODY,
    );
    const { status, problem } = parsed(answer);
    expect(status).toBe(417);
    // The server's problem: it carries the request id nginx's own answers do not.
    expect(problem).toMatchObject({ code: 'expectation_failed', request_id: expect.any(String) });
    expect(proxy.upstreamHead('X-Test-Case: expect')).toMatch(/\r\nExpect: x-magic\r\n/);
  });

  it('meets 100-continue itself, and the scoring goes through', async () => {
    const answer = await raw(
      'continue',
      [
        'POST /v1/scoring/score HTTP/1.1',
        'Host: api.example',
        `Authorization: Bearer ${key}`,
        'Content-Type: application/json',
        'Expect: 100-continue',
        `Content-Length: ${SCORE_BODY.length}`,
      ],
      SCORE_BODY,
    );
    expect(answer).toMatch(/HTTP\/1\.1 200 OK\r\n/);
    expect(proxy.upstreamHead('X-Test-Case: continue')).not.toMatch(/\r\nExpect:/i);
  });

  it.each([
    ['charset', { 'content-type': 'application/json; charset=utf-16' }, 415, 'unsupported_media_type'],
    [
      'encoding',
      { 'content-type': 'application/json', 'content-encoding': 'br' },
      415,
      'unsupported_media_type',
    ],
    [
      'corrupt-gzip',
      { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      400,
      'malformed_json',
    ],
  ])(
    'passes on a body only the server judges (%s), and the server answers its problem',
    async (marker, headers, status, code) => {
      const response = await fetch(`${proxy.url}/v1/scoring/score`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'x-test-case': marker, ...headers },
        body: SCORE_BODY,
      });
      expect(response.status).toBe(status);
      expect(await response.json()).toMatchObject({ code, request_id: expect.any(String) });
      expect(proxy.upstream().toLowerCase()).toContain(`x-test-case: ${marker}`);
    },
  );

  it('closes a connection whose headers trickle in (slowloris) at its header timeout', async () => {
    const started = Date.now();
    const socket = connect(Number(new URL(proxy.url).port), '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString('latin1');
    });
    socket.on('error', () => {});
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write('GET /healthz HTTP/1.1\r\nHost: api.example\r\nX-Test-Case: slowloris\r\n');
    // One header line a second: without a bound on the whole head, this would hold the connection open.
    let n = 0;
    const trickle = setInterval(() => {
      if (!socket.destroyed) socket.write(`X-Slow-${n++}: 1\r\n`);
    }, 1000);
    try {
      await closed;
    } finally {
      clearInterval(trickle);
    }
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(HEADER_TIMEOUT_MS - 1000);
    expect(elapsed).toBeLessThan(HEADER_TIMEOUT_MS + 5000);
    expect(answer).not.toContain('200 OK');
    expect(proxy.upstream()).not.toContain('slowloris');
  }, 20_000);
});
