import { gzip } from 'node:zlib';
import express, { type Request, type Response } from 'express';

/**
 * A JSON answer at least this long (characters) is sent gzip-compressed to a client whose Accept-Encoding
 * takes gzip (`sendJsonCompressible`): a page of 1,000 run results is about 1.4 MB, a tenth of that gzipped.
 */
export const COMPRESS_FROM_CHARS = 16 * 1024;

/** Express's own `res.json`, as the prototype has it. */
const EXPRESS_JSON = express.response.json;

/**
 * Sends `value` as the JSON answer, head and body in one write: Express's `res.json` turns a body of
 * 1,000 characters or more into a Buffer, which Node then writes beside its head with `writev` (about
 * 5 µs more per scoring, whose answer is about 1,500 characters); a string body given to `res.end` is
 * appended to the head and written once. The same bytes and headers as `res.json` (no ETag: the app
 * sets none). When something wrapped `res.json` on this answer (the contract's response validation
 * outside production), that wrapper is used instead, so the answer is still checked.
 */
export function sendJson(res: Response, value: unknown): void {
  if (res.json !== EXPRESS_JSON) {
    res.json(value);
    return;
  }
  const body = JSON.stringify(value);
  if (!res.hasHeader('Content-Type')) res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}

/**
 * Sends a JSON answer already written as text, `utf8` being its UTF-8 bytes one per character (a "latin1"
 * string, as the engine's serializers make them, e.g. `answerResultUtf8`): written as latin1, head and body in one write, its
 * length that of the string, with no JSON.stringify and no UTF-8 count. `value` is the same answer as an
 * object: when something wrapped `res.json` (the contract's response validation outside production), it is
 * sent by `sendJson` instead, so the answer is still checked.
 */
export function sendJsonUtf8(res: Response, utf8: string, value: unknown): void {
  if (res.json !== EXPRESS_JSON) {
    res.json(value);
    return;
  }
  if (!res.hasHeader('Content-Type')) res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', utf8.length);
  res.end(utf8, 'latin1');
}

/**
 * Sends `value` as `res.json` does, gzip-compressed (in libuv's pool, off the event loop) when its JSON is
 * at least `COMPRESS_FROM_CHARS` long and the client's Accept-Encoding takes gzip; `Vary: Accept-Encoding`
 * either way. For answers that can be large (a page of a run's results). Through `res.json`, so the
 * contract's response validation (outside production) still checks it: only the final send is replaced.
 */
export function sendJsonCompressible(
  req: Pick<Request, 'acceptsEncodings'>,
  res: Response,
  value: unknown,
): void {
  res.vary('Accept-Encoding');
  if (req.acceptsEncodings(['identity', 'gzip']) !== 'gzip') {
    sendJson(res, value);
    return;
  }
  const send = res.send;
  res.send = function compressing(this: Response, body?: unknown) {
    res.send = send;
    if (typeof body !== 'string' || body.length < COMPRESS_FROM_CHARS || res.statusCode !== 200)
      return send.call(this, body);
    gzip(body, (error, compressed) => {
      if (error) {
        res.destroy(error);
        return;
      }
      res.setHeader('Content-Encoding', 'gzip');
      res.setHeader('Content-Length', compressed.length);
      res.end(compressed);
    });
    return this;
  };
  res.json(value);
}
