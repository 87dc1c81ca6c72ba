import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { gzip as gzipCallback } from 'node:zlib';
import type { Request, RequestHandler } from 'express';

const gzip = promisify(gzipCallback);

/**
 * The address the built docs show for "your server" (the contract's `base_url` default, written in by
 * openapi/scripts/finish-docs.mjs). Served by a server, the docs show that server's own address instead.
 */
export const DOCS_PLACEHOLDER_ORIGIN = 'http://localhost:3000';

/** A Host header that is a plain host name or address, with an optional port: anything else is not echoed. */
const PLAIN_HOST = /^(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;
/** Bodies kept per origin; the docs are served under a handful of names (localhost, an IP, a DNS name). */
const MAX_ORIGINS = 16;

interface Prepared {
  body: Buffer;
  /** Compressed on libuv's thread pool, not on the event loop (the docs page is megabytes). */
  gzipped: Promise<Buffer>;
  etag: string;
  /** The gzipped body's tag: each representation has its own (RFC 9110 §8.8.3). */
  gzippedEtag: string;
  /** This body's own Content-Security-Policy, when the file has one. */
  csp: string | undefined;
}

function prepare(text: string, csp: ((text: string) => string) | undefined): Prepared {
  const body = Buffer.from(text, 'utf8');
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
  const gzipped = gzip(body);
  // Awaited by the requests that take gzip; until one does, a failure must not count as unhandled.
  gzipped.catch(() => {});
  return { body, gzipped, etag, gzippedEtag: `${etag.slice(0, -1)}-gzip"`, csp: csp?.(text) };
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

/** The origin the request reached, when its Host header is plain; undefined otherwise. */
function requestOrigin(req: Request): string | undefined {
  const host = req.headers.host;
  if (host === undefined || !PLAIN_HOST.test(host)) return undefined;
  return `${req.protocol}://${host}`;
}

/**
 * Serves a published file compressed (gzip when asked), with an ETag and `Cache-Control: no-cache` (a
 * browser revalidates and gets a 304 instead of megabytes). With `showOrigin`, the placeholder address in
 * it becomes the origin the request reached, so the docs show the URL of the server that serves them;
 * the ETag then differs per origin, and the bodies of a few origins are kept. Each body is prepared when
 * first asked for, not at start: compressing the docs page was a tenth of the start-up.
 */
export function servedFile(
  type: string,
  text: string,
  options: {
    showOrigin?: boolean;
    /** The Content-Security-Policy of a body (computed once per origin's body, as its hashes differ). */
    contentSecurityPolicy?: (text: string) => string;
  } = {},
): RequestHandler {
  let plain: Prepared | undefined;
  const byOrigin = new Map<string, Prepared>();
  const forOrigin = (origin: string | undefined): Prepared => {
    if (!options.showOrigin || origin === undefined || origin === DOCS_PLACEHOLDER_ORIGIN) {
      plain ??= prepare(text, options.contentSecurityPolicy);
      return plain;
    }
    let prepared = byOrigin.get(origin);
    if (prepared === undefined) {
      prepared = prepare(text.replaceAll(DOCS_PLACEHOLDER_ORIGIN, origin), options.contentSecurityPolicy);
      if (byOrigin.size >= MAX_ORIGINS) byOrigin.delete(byOrigin.keys().next().value as string);
      byOrigin.set(origin, prepared);
    }
    return prepared;
  };
  return async (req, res) => {
    const prepared = forOrigin(requestOrigin(req));
    res.type(type);
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('Vary', 'Accept-Encoding, Host');
    const gzipped = acceptsGzip(req);
    const etag = gzipped ? prepared.gzippedEtag : prepared.etag;
    res.setHeader('ETag', etag);
    if (prepared.csp !== undefined) res.setHeader('Content-Security-Policy', prepared.csp);
    if (noneMatchHits(req.headers['if-none-match'], etag)) {
      res.status(304).end();
      return;
    }
    const body = gzipped ? await prepared.gzipped : prepared.body;
    if (gzipped) res.setHeader('Content-Encoding', 'gzip');
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
