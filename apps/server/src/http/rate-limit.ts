import type { RequestHandler } from 'express';
import { AppError } from '../errors/app-error.js';
import { costNote, requestCost } from './request-cost.js';
import { secondsUntil, type TokenBucket, tokensAt } from './token-bucket.js';

/**
 * A token bucket per API key, in memory: `perSecond` requests a second with bursts up to `perSecond`.
 * Announces the limit on every response (`RateLimit-Policy`, `RateLimit`); past it answers 429
 * `rate_limited` with `Retry-After`. A request takes its operation's cost (`requestCost`: a log proof 3);
 * one that costs more than the bucket holds is refused. Runs after authentication, so buckets exist only
 * for real keys.
 */
export function rateLimit(
  perSecond: number,
  now: () => number = performance.now.bind(performance),
): RequestHandler {
  const policy = `"default";q=${perSecond};w=1`;
  const buckets = new Map<string, TokenBucket>();

  return (_req, res, next) => {
    const key = res.locals.apiKey.keyId;
    const cost = requestCost(res.locals.operationId, perSecond);
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
    if (bucket.tokens < cost) {
      const retryAfter = Math.max(1, secondsUntil(bucket.tokens, cost, perSecond));
      res.setHeader('RateLimit', `"default";r=0;t=${retryAfter}`);
      throw new AppError('rate_limited', {
        detail: `This API key is limited to ${perSecond} requests per second${costNote(cost)}; retry in ${retryAfter} s.`,
        headers: { 'Retry-After': String(retryAfter) },
      });
    }
    bucket.tokens -= cost;
    const untilFull = secondsUntil(bucket.tokens, perSecond, perSecond);
    res.setHeader('RateLimit', `"default";r=${Math.floor(bucket.tokens)};t=${untilFull}`);
    next();
  };
}
