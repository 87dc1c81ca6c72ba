import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import express, { type RequestHandler } from 'express';
import { AppError } from '../errors/app-error.js';
import { isIdentityEncoded } from './content-encoding.js';
import {
  firstDuplicateMember,
  MAX_NESTING,
  memberNameCount,
  nestsDeeperThan,
  parsedMemberCount,
} from './duplicate-members.js';
import { boundChunkedParsing, declaredLength } from './unread-body.js';

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
 * A `charset` parameter of a Content-Type other than UTF-8 (lower case, unquoted), or undefined. Parameters
 * are read whole, quoted values included, so `foo="a;charset=x"` names no charset.
 */
function foreignCharset(contentType: string): string | undefined {
  if (!contentType.includes('=')) return undefined;
  for (const [, name, value] of contentType.matchAll(/;\s*([^=;\s]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*)/g)) {
    if ((name as string).toLowerCase() !== 'charset') continue;
    const raw = (value as string).trim();
    const charset = (raw.startsWith('"') ? raw.slice(1, -1).replace(/\\(.)/g, '$1') : raw).toLowerCase();
    if (charset !== 'utf-8') return charset;
  }
  return undefined;
}

/**
 * Refuses a body that is not `application/json` with 415 before anything reads it, so the code says what
 * is wrong rather than a validation error about a missing body. So is a charset other than UTF-8:
 * body-parser would decode UTF-16 and UTF-32 too, and what is logged is the bytes sent, as UTF-8.
 */
const requireJsonMediaType: RequestHandler = (req, _res, next) => {
  const contentType = req.headers['content-type'];
  if (contentType !== undefined && isJsonMediaType(contentType)) {
    // Only a body has a charset: a read's Content-Type is ignored (normalizeContentType).
    const charset = hasBody(req.headers) ? foreignCharset(contentType) : undefined;
    if (charset === undefined) return next();
    throw new AppError('unsupported_media_type', {
      detail: `The body's charset is "${charset.slice(0, 100)}"; send it as UTF-8 (charset=utf-8, or none).`,
    });
  }
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
 * The parser's check of the raw bytes, before it parses them: refuses a body that is not valid UTF-8
 * (decoding would silently replace the bad bytes with U+FFFD, so what is logged would not be what was
 * sent) or that nests deeper than MAX_NESTING, and keeps the bytes for refuseDuplicateMembers.
 */
function checkRawBody(req: IncomingMessage, _res: unknown, body: Buffer): void {
  if (!isUtf8(body)) {
    throw new AppError('malformed_json', {
      detail: 'The body is not valid UTF-8; send JSON encoded as UTF-8.',
    });
  }
  // Before it is parsed: a deep body costs its parse and every walk after it, and is never valid.
  if (nestsDeeperThan(body, MAX_NESTING)) {
    throw new AppError('validation_failed', {
      detail: `The body nests arrays and objects deeper than ${MAX_NESTING} levels; no request of this API nests more than 4.`,
      errors: [{ path: '/body', message: `must not nest deeper than ${MAX_NESTING} levels` }],
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
  // The bytes are the ones parsed (UTF-8 only, requireJsonMediaType), so the walk finds what the counts saw.
  const duplicate = firstDuplicateMember(raw);
  if (duplicate === undefined) {
    throw new AppError('malformed_json', {
      detail: 'The body names a member twice in one object; send each member once.',
    });
  }
  const pointer = `/body${duplicate.pointer}`;
  throw new AppError('malformed_json', {
    detail: `The body names the member ${JSON.stringify(duplicate.name.slice(0, 100))} twice in one object (${
      pointer.length > 200 ? `${pointer.slice(0, 200)}…` : pointer
    }); send each member once.`,
  });
};

/**
 * Refuses at once a body whose Content-Length already says it is over the limit (when it is not
 * compressed, so that its length is what would be parsed). body-parser would refuse it too, but only once
 * the whole body had arrived ("read off entire request"), so a client that declares a large body and sends
 * it slowly, or never, got its 413 only when it had sent it all, or at the request timeout. After the
 * answer the body is read off, or the connection closed, as unread-body.ts says.
 */
function refuseDeclaredOversize(limitBytes: number): RequestHandler {
  return (req, _res, next) => {
    const length = declaredLength(req);
    if (length === undefined || length <= limitBytes || !isIdentityEncoded(req.headers)) return next();
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
    boundChunkedParsing(
      express.json({ limit: limitBytes, strict: false, type: JSON_MEDIA_TYPE, verify: checkRawBody }),
      limitBytes,
    ),
    refuseDuplicateMembers,
    normalizeContentType,
  ];
}
