import type { RequestHandler } from 'express';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { AppError } from '../errors/app-error.js';
import { clientAddress } from './client-address.js';

/** The probes a load balancer or orchestrator sends: never limited, so a flood elsewhere cannot fail them. */
const PROBE_PATHS = new Set(['/healthz', '/readyz']);

/**
 * The limit on requests that carry no API key: everything outside `/v1/` (`/docs`, `/openapi.json`,
 * `/openapi.yaml`, `/log/verifier-key`, and the 404s of other paths) except the probes `/healthz` and
 * `/readyz`. `perSecond` requests a second per client address (a fixed one-second window, in memory per
 * instance); past it, 429 `rate_limited` with `Retry-After`, before any work is done. `/v1/` requests
 * are limited per API key instead (see rate-limit.ts and auth.ts).
 */
export function anonymousRateLimit(perSecond: number): RequestHandler {
  const limiter = new RateLimiterMemory({ keyPrefix: 'anonymous', points: perSecond, duration: 1 });
  return (req, res, next) => {
    if (isUnderApi(req.path) || PROBE_PATHS.has(req.path)) return next();
    limiter.consume(clientAddress(req)).then(
      () => next(),
      (rejection: unknown) => {
        if (!(rejection instanceof RateLimiterRes)) return next(rejection);
        const retryAfter = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
        res.setHeader('RateLimit-Policy', `"anonymous";q=${perSecond};w=1`);
        res.setHeader('RateLimit', `"anonymous";r=0;t=${retryAfter}`);
        next(
          new AppError('rate_limited', {
            detail: `Requests without an API key are limited to ${perSecond} a second per client address; retry in ${retryAfter} s.`,
            headers: { 'Retry-After': String(retryAfter) },
          }),
        );
      },
    );
  };
}

/** Whether a path is one of the API's, which authentication and the per-key limit cover. */
function isUnderApi(path: string): boolean {
  return path === '/v1' || path.startsWith('/v1/');
}
