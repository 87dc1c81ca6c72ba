import type { RequestHandler } from 'express';
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { AppError } from '../errors/app-error.js';
import { costNote, requestCost } from './request-cost.js';

/**
 * The per-API-key rate limit: `perSecond` requests a second, counted by `limiter` in a fixed one-second
 * window per key (rate-limiter-flexible: in memory by default, in PostgreSQL for a budget shared by all
 * instances, see shared-rate-limit.ts). Announces the limit on every response (`RateLimit-Policy`,
 * `RateLimit` with what is left and the seconds until the window resets); past it answers 429
 * `rate_limited` with `Retry-After`. A request takes its operation's cost (`requestCost`: a log proof 3).
 * Runs after authentication, so windows exist only for real keys. `scope` ends the refusal's first
 * sentence (` across all instances`).
 */
export function rateLimit(
  perSecond: number,
  limiter: Pick<RateLimiterAbstract, 'consume'> = new RateLimiterMemory({ points: perSecond, duration: 1 }),
  scope = '',
): RequestHandler {
  const policy = `"default";q=${perSecond};w=1`;
  return async (_req, res, next) => {
    res.setHeader('RateLimit-Policy', policy);
    const cost = requestCost(res.locals.operationId, perSecond);
    let result: RateLimiterRes;
    try {
      result = await limiter.consume(res.locals.apiKey.keyId, cost);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      const retryAfter = secondsLeft(rejection);
      res.setHeader('RateLimit', `"default";r=0;t=${retryAfter}`);
      throw new AppError('rate_limited', {
        detail: `This API key is limited to ${perSecond} requests per second${scope}${costNote(cost)}; retry in ${retryAfter} s.`,
        headers: { 'Retry-After': String(retryAfter) },
      });
    }
    res.setHeader('RateLimit', `"default";r=${result.remainingPoints};t=${secondsLeft(result)}`);
    next();
  };
}

/** Whole seconds (rounded up, at least 1) until the window of a limiter's answer resets. */
export function secondsLeft(result: Pick<RateLimiterRes, 'msBeforeNext'>): number {
  return Math.max(1, Math.ceil(result.msBeforeNext / 1000));
}
