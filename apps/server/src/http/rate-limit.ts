import type { RequestHandler } from 'express';
import { AppError } from '../errors/app-error.js';

/** One API key's bucket: tokens left, as of `updatedAt` (ms). */
interface Bucket {
  tokens: number;
  updatedAt: number;
}

const MS_PER_SECOND = 1000;

/**
 * A token bucket per API key, in memory: `perSecond` requests a second with bursts up to `perSecond`.
 * Announces the limit on every response (`RateLimit-Policy`, `RateLimit`); past it answers 429
 * `rate_limited` with `Retry-After`. Runs after authentication, so buckets exist only for real keys.
 */
export function rateLimit(
  perSecond: number,
  now: () => number = performance.now.bind(performance),
): RequestHandler {
  const policy = `"default";q=${perSecond};w=1`;
  const buckets = new Map<string, Bucket>();
  const refillPerMs = perSecond / MS_PER_SECOND;

  return (_req, res, next) => {
    const key = res.locals.apiKey.keyId;
    const time = now();
    let bucket = buckets.get(key);
    if (bucket === undefined) {
      bucket = { tokens: perSecond, updatedAt: time };
      buckets.set(key, bucket);
    } else {
      bucket.tokens = Math.min(perSecond, bucket.tokens + (time - bucket.updatedAt) * refillPerMs);
      bucket.updatedAt = time;
    }
    res.setHeader('RateLimit-Policy', policy);
    if (bucket.tokens < 1) {
      const retryAfter = Math.max(1, Math.ceil((1 - bucket.tokens) / refillPerMs / MS_PER_SECOND));
      res.setHeader('RateLimit', `"default";r=0;t=${retryAfter}`);
      throw new AppError('rate_limited', {
        detail: `This API key is limited to ${perSecond} requests per second; retry in ${retryAfter} s.`,
        headers: { 'Retry-After': String(retryAfter) },
      });
    }
    bucket.tokens -= 1;
    const untilFull = Math.ceil((perSecond - bucket.tokens) / refillPerMs / MS_PER_SECOND);
    res.setHeader('RateLimit', `"default";r=${Math.floor(bucket.tokens)};t=${untilFull}`);
    next();
  };
}
