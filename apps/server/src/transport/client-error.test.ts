import { connect, type Socket } from 'node:net';
import type { Problem } from '@scenario-scoring/api-types';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { rawExchange } from '../../test/support/raw-http.js';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';
import type { Logger } from '../request-logging/logger.js';

function parse(answer: string): { status: number; headers: string; problem: Problem } {
  const [head = '', body = ''] = answer.split('\r\n\r\n');
  return { status: Number(head.split(' ')[1]), headers: head.toLowerCase(), problem: JSON.parse(body) };
}

const LIMIT = 1_048_576;

/** The connection was closed once the body sent passed four times the limit, not before, nor never. */
function expectClosedPastBound(sent: number): void {
  expect(sent).toBeGreaterThan(4 * LIMIT);
  expect(sent).toBeLessThan(16 * LIMIT);
}

/** Until `socket` drains or closes; the other listener removed (one left per wait added up past Node's 10). */
function drainedOrClosed(socket: Socket): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      socket.off('drain', done).off('close', done);
      resolve();
    };
    socket.once('drain', done).once('close', done);
  });
}

/**
 * Sends `head` (without its blank line) with `Transfer-Encoding: chunked`, then 64 KiB chunks, up to 16
 * times the body limit unless the server cuts the connection first; never the last chunk. Returns what
 * was sent, what came back, and how much had been sent when the first byte of the answer came.
 */
async function streamChunked(url: string, head: string) {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  const received: Buffer[] = [];
  let sent = 0;
  let sentAtAnswer: number | undefined;
  let answered: () => void = () => {};
  socket.on('data', (chunk: Buffer) => {
    sentAtAnswer ??= sent;
    received.push(chunk);
    answered();
  });
  // Until the server closes its side (a FIN: the client's side then ends too) or resets the connection.
  let open = true;
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  socket.on('end', () => (open = false));
  void closed.then(() => (open = false));
  socket.on('error', () => {});
  socket.write(`${head}Transfer-Encoding: chunked\r\n\r\n`);
  const chunk = `10000\r\n${'x'.repeat(65_536)}\r\n`;
  while (open && sent < 16 * LIMIT) {
    if (!socket.write(chunk)) await drainedOrClosed(socket);
    sent += 65_536;
    // A pause at twice the limit, for an answer that comes while the body is still coming.
    if (sent === 2 * LIMIT && sentAtAnswer === undefined)
      await new Promise<void>((resolve) => {
        answered = resolve;
        setTimeout(resolve, 1000);
      });
  }
  socket.destroy();
  await closed;
  return { sent, sentAtAnswer, answer: Buffer.concat(received).toString('latin1') };
}

/**
 * Sends `head`, then 24 MiB of body (chunks if `chunked`), reading nothing meanwhile; then reads what the
 * server sent until the connection ends, and returns it ('' if the connection was reset).
 */
async function writeAllThenRead(url: string, head: string, chunked: boolean): Promise<string> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  socket.pause();
  const received: Buffer[] = [];
  const ended = new Promise<void>((resolve) => {
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    socket.on('end', () => resolve());
    socket.on('close', () => resolve());
    socket.on('error', () => resolve());
  });
  socket.write(head);
  const piece = 'x'.repeat(65_536);
  const chunk = chunked ? `10000\r\n${piece}\r\n` : piece;
  let failed = false;
  socket.on('error', () => (failed = true));
  for (let sent = 0; sent < 24 * LIMIT && !failed && !socket.destroyed; sent += 65_536) {
    if (!socket.write(chunk)) await drainedOrClosed(socket);
  }
  socket.resume();
  await ended;
  socket.destroy();
  return Buffer.concat(received).toString('latin1');
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

  // Review: a body that ended before its Content-Length was said to be "for example a control character in
  // a header".
  it('says a body ended before its Content-Length, when the client ends its side early', async () => {
    const { key } = await testFeatures(storage()).keys.create('cut-body');
    const cut = (authorization: string) => {
      const { hostname, port } = new URL(server.url);
      return new Promise<string>((resolve, reject) => {
        const socket = connect(Number(port), hostname, () => {
          socket.end(
            `POST /v1/scoring/score HTTP/1.1\r\nHost: x\r\n${authorization}Content-Type: application/json\r\n` +
              'Content-Length: 100\r\n\r\n{"subject":',
          );
        });
        const chunks: Buffer[] = [];
        socket.on('data', (chunk: Buffer) => chunks.push(chunk));
        socket.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        socket.on('error', reject);
        socket.setTimeout(5000, () => socket.destroy(new Error('no answer')));
      });
    };
    const { status, problem } = parse(await cut(`Authorization: Bearer ${key}\r\n`));
    expect(status).toBe(400);
    expect(problem).toMatchObject({ status: 400, code: 'malformed_request' });
    expect(problem.detail).toMatch(/^The request ended before it was complete: the client closed its side/);
    expect(problem.detail).toContain('Content-Length');
    expect(problem.detail).not.toContain('control character');
    // Answered before its body ended (401 without a key): that answer is the only one.
    const answered = await cut('');
    expect(answered.match(/HTTP\/1\.1 \d{3}/g)).toEqual(['HTTP/1.1 401']);
  });

  it('answers with the standard reason phrase in the status line', async () => {
    const answer = await rawExchange(server.url, 'NOT HTTP AT ALL\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
  });

  it('answers a CONNECT (Node closes it without a word) with a problem+json method_not_allowed', async () => {
    const answer = await rawExchange(
      server.url,
      'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n',
    );
    expect(answer).toMatch(/^HTTP\/1\.1 405 Method Not Allowed\r\n/);
    expect(parse(answer).problem).toMatchObject({ status: 405, code: 'method_not_allowed' });
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

// Review: a request without a Host header got Node's bare 400 with no body, a repeated one was served, and
// an Expect other than 100-continue got Node's bare 417 with no body.
forEachDatabase('requests HTTP/1.1 frames wrongly', ({ storage }) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ storage: storage() });
  });
  afterAll(() => server.close());

  /** The answers on one connection to `requests`, after which a last request closes it. */
  async function answers(...requests: string[]): Promise<string[]> {
    const last = 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';
    const text = await rawExchange(server.url, requests.join('') + last);
    return text.split(/(?=HTTP\/1\.1 \d{3} )/);
  }

  it('answers an HTTP/1.1 request without a Host header with a problem+json malformed_request, and serves the next request', async () => {
    const [refused, next] = await answers('GET /healthz HTTP/1.1\r\n\r\n');
    const answer = parse(refused as string);
    expect(answer.status).toBe(400);
    expect(answer.problem).toMatchObject({
      code: 'malformed_request',
      detail: 'The request has no Host header, which HTTP/1.1 requires.',
    });
    expect(next).toMatch(/^HTTP\/1\.1 200 /);
    // HTTP/1.0 has no Host requirement.
    expect(await rawExchange(server.url, 'GET /healthz HTTP/1.0\r\n\r\n')).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('answers a request with two Host headers with a problem+json malformed_request', async () => {
    const [refused] = await answers('GET /healthz HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n');
    const answer = parse(refused as string);
    expect(answer.status).toBe(400);
    expect(answer.problem).toMatchObject({
      code: 'malformed_request',
      detail: 'The request has more than one Host header; send exactly one.',
    });
  });

  it('answers an Expect other than 100-continue with a problem+json expectation_failed, and discards the body it did not read', async () => {
    const all = await answers(
      'POST /v1/scoring/score HTTP/1.1\r\nHost: x\r\nExpect: pony\r\nContent-Type: application/json\r\n' +
        'Content-Length: 18\r\n\r\nGET / HTTP/1.1\r\n\r\n',
    );
    // Two answers: the body (which looks like a request) was discarded, and the next request served.
    expect(all.map((answer) => answer.slice(0, 12))).toEqual(['HTTP/1.1 417', 'HTTP/1.1 200']);
    expect(parse(all[0] as string).problem).toMatchObject({
      status: 417,
      code: 'expectation_failed',
      detail: 'The server meets no expectation but 100-continue; it cannot meet "Expect: pony".',
    });
  });

  it('reads off an unread chunked body after such an answer, and serves the next request', async () => {
    const all = await answers(
      'POST /v1/scoring/score HTTP/1.1\r\nHost: x\r\nExpect: pony\r\nContent-Type: application/json\r\n' +
        'Transfer-Encoding: chunked\r\n\r\n12\r\nGET / HTTP/1.1\r\n\r\n\r\n0\r\n\r\n',
    );
    expect(all.map((answer) => answer.slice(0, 12))).toEqual(['HTTP/1.1 417', 'HTTP/1.1 200']);
  });

  it('cuts the connection once an unread chunked body goes on past four times the limit', async () => {
    const streamed = await streamChunked(
      server.url,
      'POST /v1/scoring/score HTTP/1.1\r\nHost: x\r\nExpect: pony\r\nContent-Type: application/json\r\n',
    );
    expect(streamed.answer).toMatch(/^HTTP\/1\.1 417 /);
    expectClosedPastBound(streamed.sent);
  });

  it('closes the connection after such an answer when the unread body declared is over four times the limit', async () => {
    // Headers only: 100 MB declared, none sent; the server answers and closes, and rawExchange returns.
    const answer = await rawExchange(
      server.url,
      'POST /v1/scoring/score HTTP/1.1\r\nHost: x\r\nExpect: pony\r\nContent-Type: application/json\r\n' +
        'Content-Length: 100000000\r\n\r\n',
    );
    expect(answer).toMatch(/^HTTP\/1\.1 417 /);
  });
});

// Review: a chunked body was read off without bound when body-parser refused it as too large (it reads the
// whole body first, then answers 413) and after any answer from a route that reads no body.
forEachDatabase('a chunked body that goes on', ({ storage }) => {
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    ({ key } = await testFeatures(storage()).keys.create('chunked'));
    server = await startTestServer({ storage: storage() });
  });
  afterAll(() => server.close());

  it('is answered 413 as soon as it passes the limit, then cut past four times the limit', async () => {
    const streamed = await streamChunked(
      server.url,
      `POST /v1/scoring/score HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n`,
    );
    expect(streamed.answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(parse(streamed.answer).problem).toMatchObject({ code: 'payload_too_large' });
    // The answer came while the body was still coming, not at its end.
    expect(streamed.sentAtAnswer).toBeLessThan(4 * LIMIT);
    expectClosedPastBound(streamed.sent);
  });

  it('is read off after the answer of a route that reads no body, up to four times the limit, then cut', async () => {
    const streamed = await streamChunked(server.url, 'GET /openapi.json HTTP/1.1\r\nHost: x\r\n');
    expect(streamed.answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(streamed.sentAtAnswer).toBeLessThan(4 * LIMIT);
    expectClosedPastBound(streamed.sent);
  });

  it('of a compressed body is cut past four times the limit too', async () => {
    const streamed = await streamChunked(
      server.url,
      `POST /v1/scoring/score HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n`,
    );
    expectClosedPastBound(streamed.sent);
  });

  it('of an error answer before the body parser (415) is read off up to four times the limit, then cut', async () => {
    const streamed = await streamChunked(server.url, 'POST /healthz HTTP/1.1\r\nHost: x\r\n');
    expect(streamed.answer).toMatch(/^HTTP\/1\.1 415 /);
    expectClosedPastBound(streamed.sent);
  });

  it('declared over four times the limit closes the connection after any answer, a 200 included', async () => {
    // Headers only: 100 MB declared to a route that reads no body; the server answers and closes.
    const answer = await rawExchange(
      server.url,
      'GET /openapi.json HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n',
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('closes gracefully: a client that writes its whole body before it reads still gets the answer', async () => {
    // The client reads nothing until it has written 24 MiB: a reset from the server would make its system
    // drop the answer waiting unread, a FIN keeps it.
    const targets = [
      ['GET /openapi.json', '', 200],
      ['POST /v1/scoring/score', `Authorization: Bearer ${key}\r\nContent-Type: application/json\r\n`, 413],
    ] as const;
    for (const [line, headers, status] of targets)
      for (const framing of ['Transfer-Encoding: chunked', `Content-Length: ${100 * LIMIT}`]) {
        const chunked = framing.startsWith('Transfer');
        const answer = await writeAllThenRead(
          server.url,
          `${line} HTTP/1.1\r\nHost: x\r\n${headers}${framing}\r\n\r\n`,
          chunked,
        );
        expect(answer.slice(0, 12), `${line}, ${framing}`).toBe(`HTTP/1.1 ${status}`);
      }
  });

  it('that ends within the limit is parsed as any body', async () => {
    const body = JSON.stringify({ subject: 'chunked', context: { jurisdiction: 'DE' } });
    const answer = await rawExchange(
      server.url,
      `POST /v1/scoring/score HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
        `Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
  });
});

// Review: a request cut off by the request timeout was answered 408 but logged as a client abort (499).
forEachDatabase('the request timeout', ({ storage }) => {
  const lines: { message: string; fields: Record<string, unknown> }[] = [];
  const logger: Logger = {
    info: (message, fields = {}) => lines.push({ message, fields }),
    error: (message, fields = {}) => lines.push({ message, fields }),
    request: (_severity, line) => lines.push({ message: 'request', fields: { ...line } }),
  };
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    ({ key } = await testFeatures(storage()).keys.create('slow'));
    server = await startTestServer({ storage: storage(), logger, requestTimeoutMs: 300 });
  });
  afterAll(() => server.close());

  it('answers a body that never ends with 408 request_timeout, and logs a 408, not a client abort', async () => {
    const answer = parse(
      await rawExchange(
        server.url,
        'POST /v1/scoring/score HTTP/1.1\r\nHost: x\r\n' +
          `Authorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"sub`,
      ),
    );
    expect(answer.status).toBe(408);
    expect(answer.problem).toMatchObject({ code: 'request_timeout', status: 408 });
    await vi.waitFor(() => expect(lines.some((line) => line.message === 'request')).toBe(true));
    const logged = lines.find((line) => line.message === 'request')?.fields;
    expect(logged).toMatchObject({ status: 408, operation: 'scoreSubject' });
    expect(logged).not.toHaveProperty('aborted');
    expect(lines.map((line) => line.message)).not.toContain('client aborted the request');
  });
});
