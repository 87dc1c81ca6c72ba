import { createHash } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import helmet, { type HelmetOptions } from 'helmet';

/** The sha256 CSP sources of every inline `<script>` in `html`, so the docs page runs them and nothing else. */
export function inlineScriptHashes(html: string): string[] {
  const hashes = new Set<string>();
  for (const match of html.matchAll(/<script(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/g)) {
    hashes.add(
      `'sha256-${createHash('sha256')
        .update(match[1] ?? '')
        .digest('base64')}'`,
    );
  }
  return [...hashes];
}

/**
 * The one Content Security Policy, with the inline scripts it allows by hash (none but the docs page's):
 * Redoc's inline styles, images and fonts from the server itself or `data:` (the logo is inlined), and
 * nothing from anywhere else.
 */
function cspDirectives(scriptHashes: readonly string[]): Record<string, string[]> {
  return {
    'default-src': ["'self'"],
    'script-src': ["'self'", ...scriptHashes],
    'style-src': ["'self'", "'unsafe-inline'"],
    'img-src': ["'self'", 'data:'],
    'font-src': ["'self'", 'data:'],
    'worker-src': ["'self'", 'blob:'],
    'connect-src': ["'self'"],
    'object-src': ["'none'"],
    'base-uri': ["'none'"],
    'form-action': ["'none'"],
    'frame-ancestors': ["'none'"],
  };
}

/**
 * The policy for one served docs page: its own inline scripts by hash. The served page shows the address
 * of the server it came from, so each address's page has its own hashes (see docs/served-docs.ts).
 */
export function docsContentSecurityPolicy(html: string): string {
  return Object.entries(cspDirectives(inlineScriptHashes(html)))
    .map(([name, sources]) => `${name} ${sources.join(' ')}`)
    .join(';');
}

/** helmet's options for every response. */
export const HELMET_OPTIONS: HelmetOptions = {
  contentSecurityPolicy: { useDefaults: false, directives: cspDirectives([]) },
  referrerPolicy: { policy: 'no-referrer' },
};

/**
 * Security headers on every response (helmet): `nosniff`, no framing, no referrer, HSTS, and the Content
 * Security Policy with no inline script allowed; the docs page replaces it with its own (the same policy
 * plus the hashes of its scripts). The API answers JSON, where the policy costs nothing. Express's
 * `X-Powered-By` is off (see app.ts).
 */
export function securityHeaders(): RequestHandler {
  const headers = headersSetBy(helmet(HELMET_OPTIONS));
  return (_req, res, next) => {
    for (const [name, value] of headers) res.setHeader(name, value);
    next();
  };
}

/**
 * The headers a request-independent middleware sets, found by running it once on a stand-in response.
 * helmet computes the same values for every request here (no directive is a function of the request),
 * but as a dozen middlewares walking their options each time: applying its result is one loop.
 * `X-Powered-By`, which helmet removes, is never set (app.ts disables it).
 */
export function headersSetBy(middleware: RequestHandler): [string, string][] {
  const headers = new Map<string, string>();
  let passed = false;
  const standIn = {
    setHeader: (name: string, value: unknown) => headers.set(name, String(value)),
    removeHeader: (name: string) => headers.delete(name),
  };
  middleware({ headers: {} } as Request, standIn as unknown as Response, (error?: unknown) => {
    if (error !== undefined) throw error;
    passed = true;
  });
  if (!passed) throw new Error('the header middleware did not pass the request on synchronously');
  return [...headers];
}
