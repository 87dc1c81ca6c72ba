import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { gzip as gzipCallback } from 'node:zlib';
import type { Request, RequestHandler } from 'express';

const gzip = promisify(gzipCallback);

/**
 * The address the built docs show for "your server" (the contract's `base_url` default, written in by
 * openapi/scripts/finish-docs.mjs). With `PUBLIC_BASE_URL` set, the served docs show that address instead.
 */
export const DOCS_PLACEHOLDER_ORIGIN = 'http://localhost:3000';

/** One representation of the file, made once. */
interface Prepared {
  body: Buffer;
  etag: string;
  /** This body's own Content-Security-Policy, when the file has one. */
  csp: string | undefined;
}

/** Whether the client takes gzip (`Accept-Encoding: gzip`, not with q=0). */
function acceptsGzip(req: Request): boolean {
  const header = req.headers['accept-encoding'];
  if (typeof header !== 'string') return false;
  return header.split(',').some((part) => {
    const [coding, ...params] = part.trim().split(';');
    if (coding?.trim().toLowerCase() !== 'gzip' && coding?.trim() !== '*') return false;
    return !params.some((param) => /^\s*q=0(\.0*)?\s*$/.test(param));
  });
}

/**
 * Serves a published file compressed (gzip when asked), with an ETag and `Cache-Control: no-cache` (a
 * browser revalidates and gets a 304 instead of megabytes). The body is the same for every request: it is
 * made once, on the first request (`text` is called then: making the docs page, with its CSP hashes, is
 * tens of milliseconds, too much for the start-up and far too much for each request), and its gzip once,
 * on the thread pool, on the first request that asks for gzip. Nothing depends on the request's `Host`.
 */
export function servedFile(
  type: string,
  text: string | (() => string),
  options: {
    /** The Content-Security-Policy of the body (computed once, with the body). */
    contentSecurityPolicy?: (text: string) => string;
    /** Called each time a representation is made (tests count them). */
    onPrepare?: (representation: 'identity' | 'gzip') => void;
  } = {},
): RequestHandler {
  let plain: Prepared | undefined;
  let gzipped: Promise<Buffer> | undefined;
  const identity = (): Prepared => {
    if (plain === undefined) {
      options.onPrepare?.('identity');
      const source = typeof text === 'string' ? text : text();
      const body = Buffer.from(source, 'utf8');
      const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
      plain = { body, etag, csp: options.contentSecurityPolicy?.(source) };
    }
    return plain;
  };
  const compressed = (body: Buffer): Promise<Buffer> => {
    if (gzipped === undefined) {
      options.onPrepare?.('gzip');
      gzipped = gzip(body);
      // A failure is not kept: the next request that asks for gzip tries again.
      gzipped.catch(() => {
        gzipped = undefined;
      });
    }
    return gzipped;
  };
  return async (req, res) => {
    const prepared = identity();
    res.type(type);
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('Vary', 'Accept-Encoding');
    const takesGzip = acceptsGzip(req);
    // Each representation has its own tag (RFC 9110 §8.8.3).
    const etag = takesGzip ? `${prepared.etag.slice(0, -1)}-gzip"` : prepared.etag;
    res.setHeader('ETag', etag);
    if (prepared.csp !== undefined) res.setHeader('Content-Security-Policy', prepared.csp);
    if (noneMatchHits(req.headers['if-none-match'], etag)) {
      res.status(304).end();
      return;
    }
    // A HEAD that asks for gzip needs the compressed length, so it makes the gzip too (once).
    const body = takesGzip ? await compressed(prepared.body) : prepared.body;
    if (takesGzip) res.setHeader('Content-Encoding', 'gzip');
    res.setHeader('Content-Length', String(body.length));
    res.end(req.method === 'HEAD' ? undefined : body);
  };
}

/**
 * Whether an `If-None-Match` header names `etag`: `*`, or a list of tags compared weakly (RFC 9110
 * §13.1.2: `W/"x"` matches `"x"`).
 */
export function noneMatchHits(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}
