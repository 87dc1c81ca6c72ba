import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { RequestHandler } from 'express';
import { AppError } from '../errors/app-error.js';
import { isIdentityEncoded } from './content-encoding.js';

/**
 * How much of a request body the server reads that it will not use, and how it stops. Node reads a body
 * nobody read off the connection after the answer and discards it, so that a client still sending gets
 * the answer and the connection serves its next request; body-parser, refusing a body (too large,
 * malformed), first reads the rest of it the same way, and answers after. Neither bounds it: a body
 * declared or sent endlessly would be read until the request timeout (3 GB at 100 MB/s), with no key
 * needed. Here it is read off up to READ_OFF_FACTOR times the body limit, then the connection is closed
 * gracefully (lingerClose), so that the client still gets the answer.
 */
export const READ_OFF_FACTOR = 4;

/**
 * How long a connection closed past the read-off bound is still read from after the server's FIN: closing
 * a socket with unread data resets the connection, and a reset makes the client's system drop the answer
 * it holds unread (a client that writes its whole body before reading loses it). As nginx's lingering
 * close: the client has this long to read the answer, whatever it still sends is discarded.
 */
export const LINGER_MS = 2000;

/** The body's length as its Content-Length declares it (decimal digits only), or undefined. */
export function declaredLength(req: IncomingMessage): number | undefined {
  const length = req.headers['content-length'];
  return length !== undefined && /^\d+$/.test(length) ? Number(length) : undefined;
}

/** Half-closes `socket` (its answer, then FIN), reads on and discards for LINGER_MS, then destroys it. */
export function lingerClose(socket: Socket): void {
  socket.end();
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
}

/** Requests whose body's reading is bounded already. */
const bounded = new WeakSet<IncomingMessage>();

/**
 * Reads `req`'s body off from now on, discarding it, telling `onChunk` each chunk's size; once per request,
 * and not once the body has all come (false then). Only once the body is being read (a parser's listener)
 * or no longer wanted (the answer is ending): a listener of its own starts the flow, and what came before
 * a parser's would be lost to it.
 */
function readOff(req: IncomingMessage, onChunk: (size: number) => void): boolean {
  if (bounded.has(req) || req.complete) return false;
  bounded.add(req);
  req.on('data', (chunk: Buffer) => onChunk(chunk.length));
  return true;
}

/** Counts what is read of `req`'s body (readOff), and closes the connection (lingerClose) past `maxBytes`. */
function closePast(req: IncomingMessage, maxBytes: number, onRead?: (read: number) => void): void {
  let read = 0;
  let closing = false;
  readOff(req, (size) => {
    read += size;
    onRead?.(read);
    if (read > maxBytes && !closing) {
      closing = true;
      lingerClose(req.socket);
    }
  });
}

/**
 * The first middleware for every request, for a body left unread by its answer, whatever the answer (a
 * route that reads no body answers 200, and Node would read it all): one chunked (no length) is read off
 * up to READ_OFF_FACTOR times the limit, then the connection closes (lingerClose); one declared over that
 * is not worth reading, and its connection closes as soon as the answer is out. A body declared within it
 * is read off as Node does. One header test for most requests.
 */
export function boundUnreadBodies(limitBytes: number): RequestHandler {
  const maxBytes = READ_OFF_FACTOR * limitBytes;
  return (req, res, next) => {
    const length = req.headers['content-length'];
    // Read off by these listeners, not Node: once Node reads a body off ('finish'), its parser discards
    // the bytes unseen. 'prefinish' comes first, as the answer ends; a body being read already (by the
    // parser) or read whole is left as it is.
    if (length === undefined) {
      if (req.headers['transfer-encoding'] !== undefined)
        res.once('prefinish', () => closePast(req, maxBytes));
    } else if (Number(length) > maxBytes) {
      res.once('prefinish', () => {
        if (readOff(req, () => {})) res.once('finish', () => lingerClose(req.socket));
      });
    }
    next();
  };
}

/**
 * Wraps the JSON parser for a body without a length (chunked), whose size shows only as it comes:
 * answered `413 payload_too_large` as soon as it passes the limit (body-parser answers only once the whole
 * body has come, having read it off first), and its connection closed once READ_OFF_FACTOR times the limit
 * has come. A compressed body is limited after decompression, which is never much smaller than the
 * compressed bytes: it is answered 413 past twice the limit of those, if the parser has not refused it.
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
    const refuseAt = isIdentityEncoded(req.headers) ? limitBytes : 2 * limitBytes;
    closePast(req, READ_OFF_FACTOR * limitBytes, (read) => {
      if (answered || read <= refuseAt) return;
      answered = true;
      next(
        new AppError('payload_too_large', {
          detail: `The body is larger than the limit of ${limitBytes} bytes.`,
        }),
      );
    });
  };
}
