import type { RequestHandler } from 'express';
import { AppError } from '../errors/app-error.js';
import { retryAfterSeconds, secondsUntil, type TokenBucket, tokensAt } from './token-bucket.js';

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
  const buckets = new Map<string, TokenBucket>();

  return (_req, res, next) => {
    const key = res.locals.apiKey.keyId;
    const time = now();
    let bucket = buckets.get(key);
    if (bucket === undefined) {
      bucket = { tokens: perSecond, updatedAt: time };
      buckets.set(key, bucket);
    } else {
      bucket.tokens = tokensAt(bucket, time, perSecond);
      bucket.updatedAt = time;
    }
    res.setHeader('RateLimit-Policy', policy);
    if (bucket.tokens < 1) {
      const retryAfter = retryAfterSeconds(bucket.tokens, perSecond);
      res.setHeader('RateLimit', `"default";r=0;t=${retryAfter}`);
      throw new AppError('rate_limited', {
        detail: `This API key is limited to ${perSecond} requests per second; retry in ${retryAfter} s.`,
        headers: { 'Retry-After': String(retryAfter) },
      });
    }
    bucket.tokens -= 1;
    const untilFull = secondsUntil(bucket.tokens, perSecond, perSecond);
    res.setHeader('RateLimit', `"default";r=${Math.floor(bucket.tokens)};t=${untilFull}`);
    next();
  };
}
