import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import express, { type RequestHandler } from 'express';
import { AppError } from '../errors/app-error.js';
import { firstDuplicateMember, memberNameCount, parsedMemberCount } from './duplicate-members.js';

const JSON_MEDIA_TYPE = 'application/json';
const BODYLESS_METHODS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS']);

function isJsonMediaType(contentType: string): boolean {
  const end = contentType.indexOf(';');
  return (end === -1 ? contentType : contentType.slice(0, end)).trim().toLowerCase() === JSON_MEDIA_TYPE;
}

function hasBody(headers: { 'transfer-encoding'?: string; 'content-length'?: string }): boolean {
  const length = headers['content-length'];
  return headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * Refuses a body that is not `application/json` with 415 before anything reads it, so the code says what
 * is wrong rather than a validation error about a missing body.
 */
const requireJsonMediaType: RequestHandler = (req, _res, next) => {
  const contentType = req.headers['content-type'];
  if (contentType !== undefined && isJsonMediaType(contentType)) return next();
  if (hasBody(req.headers)) {
    throw new AppError('unsupported_media_type', {
      detail:
        contentType === undefined
          ? 'The body has no Content-Type; send it as application/json.'
          : `The body is sent as "${contentType.slice(0, 100)}"; send it as application/json.`,
    });
  }
  next();
};

/**
 * After parsing, one spelling of the content type for every request: the contract validator caches its
 * compiled schemas per content type, so a client varying parameters (`; x=1`, `; x=2`, …) would otherwise
 * make it compile and keep a new validator for each. Body-less reads get none, as warmed up at start;
 * body-less writes get JSON, so the contract reports the missing body.
 */
const normalizeContentType: RequestHandler = (req, _res, next) => {
  // A write with no body at all is a missing body (400 validation_failed), not a wrong media type.
  if (
    req.headers['content-type'] === undefined &&
    !BODYLESS_METHODS.has(req.method) &&
    !hasBody(req.headers)
  ) {
    req.headers['content-type'] = JSON_MEDIA_TYPE;
  } else if (req.headers['content-type'] !== undefined) {
    if (BODYLESS_METHODS.has(req.method) && !hasBody(req.headers)) delete req.headers['content-type'];
    else req.headers['content-type'] = JSON_MEDIA_TYPE;
  }
  next();
};

/**
 * Refuses a body that is not valid UTF-8 (defect #9): decoding would silently replace the bad bytes with
 * U+FFFD, so what is logged would not be what was sent.
 */
function requireUtf8(req: IncomingMessage, _res: unknown, body: Buffer): void {
  if (!isUtf8(body)) {
    throw new AppError('malformed_json', {
      detail: 'The body is not valid UTF-8; send JSON encoded as UTF-8.',
    });
  }
  rawBodies.set(req, body);
}

/** Each parsed request's body as received (decompressed), for refuseDuplicateMembers. */
const rawBodies = new WeakMap<IncomingMessage, Buffer>();

/**
 * Refuses a body with an object that names a member twice (see duplicate-members.ts): JSON.parse kept the
 * last, where another reader of the same bytes may keep the first.
 */
const refuseDuplicateMembers: RequestHandler = (req, _res, next) => {
  const raw = rawBodies.get(req);
  if (raw === undefined || memberNameCount(raw) === parsedMemberCount(req.body)) return next();
  const duplicate = firstDuplicateMember(raw.toString('utf8'));
  const name = JSON.stringify(duplicate?.name.slice(0, 100));
  throw new AppError('malformed_json', {
    detail: `The body names the member ${name} twice in one object (/body${duplicate?.pointer ?? ''}); send each member once.`,
  });
};

/** Above this many times the body limit, an unread body is not read off after the answer. */
const READ_OFF_FACTOR = 4;

/** The body's length as its Content-Length declares it (decimal digits only), or undefined. */
function declaredLength(req: IncomingMessage): number | undefined {
  const length = req.headers['content-length'];
  return length !== undefined && /^\d+$/.test(length) ? Number(length) : undefined;
}

/**
 * What becomes of a body that an answer leaves unread (an error before the body parser): whether the
 * connection must close after the answer. Node reads such a body off and discards it after the answer, so
 * that a client still sending gets the answer (closing a connection with unread data resets it, and the
 * client often loses the answer) and the connection serves its next request. A body is read off up to
 * READ_OFF_FACTOR times the limit: one whose Content-Length declares more closes the connection after the
 * answer; one without a length (chunked) is read off up to that much, and then its connection is cut.
 */
export function closesAfterUnreadBody(req: IncomingMessage, limitBytes: number): boolean {
  if (req.complete) return false;
  const length = declaredLength(req);
  if (length !== undefined) return length > READ_OFF_FACTOR * limitBytes;
  if (req.headers['transfer-encoding'] !== undefined && !req.readableFlowing) {
    let read = 0;
    req.on('data', (chunk: Buffer) => {
      read += chunk.length;
      if (read > READ_OFF_FACTOR * limitBytes) req.socket.destroy();
    });
  }
  return false;
}

/**
 * Refuses at once a body whose Content-Length already says it is over the limit (when it is not
 * compressed, so that its length is what would be parsed). body-parser would refuse it too, but only once
 * the whole body had arrived ("read off entire request"), so a client that declares a large body and sends
 * it slowly, or never, got its 413 only when it had sent it all, or at the request timeout. After the
 * answer the body is read off, or the connection closed, as closesAfterUnreadBody says.
 */
function refuseDeclaredOversize(limitBytes: number): RequestHandler {
  return (req, _res, next) => {
    const length = declaredLength(req);
    const encoding = req.headers['content-encoding'];
    if (length === undefined || (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity'))
      return next();
    if (length <= limitBytes) return next();
    throw new AppError('payload_too_large', {
      detail: `The body is larger than the limit of ${limitBytes} bytes (its Content-Length is ${req.headers['content-length']}).`,
    });
  };
}

/**
 * Parses JSON bodies up to `limitBytes`. Not strict, so a scalar body parses and is then refused by the
 * contract ("must be object") rather than reported as malformed JSON. A member named twice in one object
 * is malformed JSON (refuseDuplicateMembers).
 */
export function jsonBody(limitBytes: number): RequestHandler[] {
  return [
    requireJsonMediaType,
    refuseDeclaredOversize(limitBytes),
    express.json({ limit: limitBytes, strict: false, type: JSON_MEDIA_TYPE, verify: requireUtf8 }),
    refuseDuplicateMembers,
    normalizeContentType,
  ];
}
