import { maxHeaderSize, type Server, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ErrorCode } from '../errors/error-codes.js';
import { ERROR_CODES } from '../errors/error-codes.js';
import { problem } from '../errors/problem.js';

/** The problem for an error of Node's HTTP parser, by its code (the statuses Node itself would answer). */
function parserProblem(code: string | undefined): { code: ErrorCode; detail: string } {
  if (code === 'HPE_HEADER_OVERFLOW')
    return {
      code: 'headers_too_large',
      detail: `The request line and headers exceed the limit of ${maxHeaderSize} bytes.`,
    };
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return { code: 'request_timeout', detail: 'The request did not arrive within the request timeout.' };
  // The client ended its side of the connection in the middle of a request: most often a body shorter than
  // its Content-Length (or a chunked body without its last chunk). Nothing in what arrived was invalid.
  if (code === 'HPE_INVALID_EOF_STATE')
    return {
      code: 'malformed_request',
      detail:
        'The request ended before it was complete: the client closed its side of the connection before the body reached the length its Content-Length header gave (or before the last chunk of a chunked body).',
    };
  return {
    code: 'malformed_request',
    detail: `The request is not valid HTTP/1.1 (${code ?? 'unparseable'}), for example a control character in a header.`,
  };
}

/** The connections that Node's request timeout ended (the client got a 408 from answerClientErrors). */
const timedOutConnections = new WeakSet<object>();

/**
 * Whether Node's request timeout ended this request's connection: its request then ends as if its client
 * had left, but the client was answered 408 `request_timeout`, and that is what the request log says.
 */
export function requestTimedOut(socket: object): boolean {
  return timedOutConnections.has(socket);
}

/**
 * Answers what Node's HTTP parser refuses — a control character in a header, 16 KiB of headers, a
 * request that never finishes — with a problem+json like every other error, instead of Node's bare
 * `400 Bad Request` without a body. Express never sees these requests, so the answer is written to the
 * socket here, and the connection closed (the parser cannot find where a next request would start).
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    // As Node's default handler: nothing can be answered on a reset socket or once a response began.
    const started = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
    // A client that ends its side in the middle of a body it was already answered for (the server reads
    // off a body it did not use) gets no second answer, which would answer no request.
    const answered = (socket as { parser?: { incoming?: { res?: { writableEnded?: boolean } } } }).parser
      ?.incoming?.res?.writableEnded;
    if (error.code === 'ECONNRESET' || !socket.writable || started || answered) {
      socket.destroy();
      return;
    }
    if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') timedOutConnections.add(socket);
    const { code, detail } = parserProblem(error.code);
    endWithProblem(socket, code, detail);
  });
  answerConnectRequests(server);
}

/**
 * Answers a CONNECT (a proxy's method, which Node hands to a `connect` listener, not to Express, and
 * otherwise closes without a word) with 405 `method_not_allowed`, as Express answers any method the
 * contract does not have.
 */
function answerConnectRequests(server: Server): void {
  server.on('connect', (_req, socket: Duplex) => {
    socket.on('error', () => {});
    endWithProblem(socket, 'method_not_allowed', 'CONNECT is not a method of this API; it is not a proxy.');
  });
}

/** Writes a problem+json answer to a socket Express does not own, and closes it. */
function endWithProblem(socket: Duplex, code: ErrorCode, detail: string): void {
  const body = JSON.stringify(problem(code, { detail }));
  const { status } = ERROR_CODES[code];
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n` +
      'Content-Type: application/problem+json; charset=utf-8\r\n' +
      'X-Content-Type-Options: nosniff\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}
