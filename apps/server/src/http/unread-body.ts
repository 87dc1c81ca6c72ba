import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import { AppError } from '../errors/app-error.js';

/**
 * How much of a request body the server reads that it will not use, and when it stops. Node reads a body
 * nobody read off the connection after the answer and discards it, so that a client still sending gets
 * the answer (closing a connection with unread data resets it, and the client often loses the answer) and
 * the connection serves its next request; body-parser, refusing a body (too large, malformed), first
 * reads the rest of it the same way, and answers after. Neither bounds it: a body declared or sent
 * endlessly would be read until the request timeout (3 GB at 100 MB/s), with no key needed. Here it is read
 * off up to READ_OFF_FACTOR times the body limit, no further.
 */
export const READ_OFF_FACTOR = 4;

/** The body's length as its Content-Length declares it (decimal digits only), or undefined. */
export function declaredLength(req: IncomingMessage): number | undefined {
  const length = req.headers['content-length'];
  return length !== undefined && /^\d+$/.test(length) ? Number(length) : undefined;
}

/** Requests whose body's reading is bounded already. */
const bounded = new WeakSet<IncomingMessage>();

/**
 * Counts what is read of `req`'s body from now on, by anyone, and cuts the connection past `maxBytes`.
 * Only once the body is being read (a parser's listener) or no longer wanted (the answer is ending): a
 * listener of its own starts the flow, and what came before a parser's would be lost to it.
 */
function cutPast(req: IncomingMessage, maxBytes: number, onByte?: (read: number) => void): void {
  if (bounded.has(req) || req.complete) return;
  bounded.add(req);
  let read = 0;
  req.on('data', (chunk: Buffer) => {
    read += chunk.length;
    onByte?.(read);
    if (read > maxBytes) req.socket.destroy();
  });
}

/**
 * Whether the connection must close after an error answer that leaves `req`'s body unread: when its
 * Content-Length declares over READ_OFF_FACTOR times the limit (otherwise it is read off after the
 * answer). A body without a length (chunked) is read off after it up to that much, then its connection is
 * cut (boundUnreadBodies).
 */
export function closesAfterUnreadBody(req: IncomingMessage, limitBytes: number): boolean {
  if (req.complete) return false;
  const length = declaredLength(req);
  return length !== undefined && length > READ_OFF_FACTOR * limitBytes;
}

/**
 * The first middleware for every request with a body: one declared over READ_OFF_FACTOR times the limit
 * closes its connection after the answer, whatever the answer (a route that reads no body answers 200 and
 * Node would read it all off); one without a length (chunked) is read off after the answer up to that
 * much, then its connection is cut. A body of at most its declared length is read off as Node does. One
 * header test for a request with a Content-Length.
 */
export function boundUnreadBodies(limitBytes: number): RequestHandler {
  const maxBytes = READ_OFF_FACTOR * limitBytes;
  return (req, res, next) => {
    const length = req.headers['content-length'];
    if (length !== undefined) {
      if (Number(length) > maxBytes) res.setHeader('Connection', 'close');
    } else if (req.headers['transfer-encoding'] !== undefined) {
      // Read off by this listener, not Node: once Node reads a body off ('finish'), its parser discards
      // the bytes unseen. 'prefinish' comes first, as the answer ends; a body being read already (by the
      // parser) or read whole is left as it is.
      res.once('prefinish', () => cutPast(req, maxBytes));
    }
    next();
  };
}

/**
 * Wraps the JSON parser for a body without a length (chunked), whose size shows only as it comes:
 * answered `413 payload_too_large` as soon as it passes the limit (body-parser answers only once the whole
 * body has come, having read it off first), and its connection cut once READ_OFF_FACTOR times the limit
 * has come. A compressed body is limited after decompression by the parser, so only the cut applies.
 */
export function boundChunkedParsing(parser: RequestHandler, limitBytes: number): RequestHandler {
  return (req, res, next) => {
    if (req.headers['transfer-encoding'] === undefined || req.headers['content-length'] !== undefined)
      return parser(req, res, next);
    let answered = false;
    parser(req, res, (error?: unknown) => {
      if (!answered) next(error);
    });
    // The parser reads synchronously once it reads at all; a body it skipped is left to Node.
    if (!req.readableFlowing) return;
    const encoding = req.headers['content-encoding'];
    const identity = encoding === undefined || encoding.trim().toLowerCase() === 'identity';
    cutPast(req, READ_OFF_FACTOR * limitBytes, (read) => {
      if (!identity || answered || read <= limitBytes) return;
      answered = true;
      next(
        new AppError('payload_too_large', {
          detail: `The body is larger than the limit of ${limitBytes} bytes.`,
        }),
      );
    });
  };
}
