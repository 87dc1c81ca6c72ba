import type { RequestHandler } from 'express';
import { CompiledQuery } from 'kysely';
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import { AppError } from '../errors/app-error.js';
import type { Storage } from '../storage/storage.js';
import { rateLimit } from './rate-limit.js';
import { costNote, requestCost } from './request-cost.js';

/** The table the shared counters live in (created by rate-limiter-flexible, `IF NOT EXISTS`). */
export const RATE_LIMIT_TABLE = 'rate_limits';

/**
 * The per-API-key rate limit. On PostgreSQL every instance counts in one table
 * (rate-limiter-flexible's atomic upsert, a fixed one-second window), so two instances share one budget
 * rather than each granting it in full; if the database cannot answer, each instance falls back to an
 * in-memory limiter of the same size (the `insuranceLimiter`) rather than failing requests. A request
 * takes its operation's cost (`requestCost`), as in the in-process limiter. On SQLite
 * (one instance per data directory) the in-process token bucket does it without a round trip.
 */
export async function createRateLimit(
  storage: Pick<Storage, 'db' | 'kind'>,
  perSecond: number,
): Promise<RequestHandler> {
  if (storage.kind !== 'postgres') return rateLimit(perSecond);
  // rate-limiter-flexible speaks to a node-postgres-like client; this one runs its queries through the
  // storage's own Kysely pool, so the limiter needs no connections of its own.
  const client = {
    query: (query: { text: string; values?: unknown[] }) =>
      storage.db.executeQuery(CompiledQuery.raw(query.text, query.values ?? [])),
  };
  const limiter = await new Promise<RateLimiterPostgres>((resolve, reject) => {
    const created: RateLimiterPostgres = new RateLimiterPostgres(
      {
        storeClient: client,
        storeType: 'client',
        tableName: RATE_LIMIT_TABLE,
        keyPrefix: 'api_key',
        points: perSecond,
        duration: 1,
        insuranceLimiter: new RateLimiterMemory({ points: perSecond, duration: 1 }),
      },
      (error?: unknown) => (error ? reject(error) : resolve(created)),
    );
  });
  const policy = `"default";q=${perSecond};w=1`;
  return (_req, res, next) => {
    res.setHeader('RateLimit-Policy', policy);
    const cost = requestCost(res.locals.operationId, perSecond);
    limiter.consume(res.locals.apiKey.keyId, cost).then(
      (result) => {
        const reset = Math.max(1, Math.ceil(result.msBeforeNext / 1000));
        res.setHeader('RateLimit', `"default";r=${result.remainingPoints};t=${reset}`);
        next();
      },
      (rejection: unknown) => {
        if (!(rejection instanceof RateLimiterRes)) return next(rejection);
        const retryAfter = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
        res.setHeader('RateLimit', `"default";r=0;t=${retryAfter}`);
        next(
          new AppError('rate_limited', {
            detail: `This API key is limited to ${perSecond} requests per second across all instances${costNote(cost)}; retry in ${retryAfter} s.`,
            headers: { 'Retry-After': String(retryAfter) },
          }),
        );
      },
    );
  };
}
