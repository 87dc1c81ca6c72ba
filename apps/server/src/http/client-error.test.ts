import { connect } from 'node:net';
import type { Problem } from '@scenario-scoring/api-types';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';

/** Sends raw bytes and reads the whole answer (the server closes the connection after it). */
function rawExchange(url: string, request: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(request));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.on('error', reject);
    socket.setTimeout(5000, () => socket.destroy(new Error('no answer')));
  });
}

function parse(answer: string): { status: number; headers: string; problem: Problem } {
  const [head = '', body = ''] = answer.split('\r\n\r\n');
  return { status: Number(head.split(' ')[1]), headers: head.toLowerCase(), problem: JSON.parse(body) };
}

// Review: what Node's HTTP parser refuses was answered `400`/`431` with no body and no code.
forEachDatabase('errors of the HTTP parser', ({ storage }) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ storage: storage() });
  });
  afterAll(() => server.close());

  it('answers a control character in a header with a problem+json malformed_request', async () => {
    const answer = parse(
      await rawExchange(
        server.url,
        'GET /v1/log/checkpoint HTTP/1.1\r\nHost: x\r\nX-Request-Id: a\x01b\r\n\r\n',
      ),
    );
    expect(answer.status).toBe(400);
    expect(answer.headers).toContain('content-type: application/problem+json');
    expect(answer.problem).toMatchObject({ status: 400, code: 'malformed_request' });
  });

  it('answers headers over 16 KiB with a problem+json headers_too_large', async () => {
    const answer = parse(
      await rawExchange(
        server.url,
        `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      ),
    );
    expect(answer.status).toBe(431);
    expect(answer.problem).toMatchObject({ status: 431, code: 'headers_too_large' });
  });

  it('answers a broken request line with a problem+json, and still serves the next connection', async () => {
    const answer = parse(await rawExchange(server.url, 'NOT HTTP AT ALL\r\n\r\n'));
    expect(answer.problem).toMatchObject({ status: 400, code: 'malformed_request' });
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });
});
