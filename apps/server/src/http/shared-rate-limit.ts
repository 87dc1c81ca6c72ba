import type { RequestHandler } from 'express';
import { CompiledQuery } from 'kysely';
import { RateLimiterMemory, RateLimiterPostgres } from 'rate-limiter-flexible';
import type { Storage } from '../storage/storage.js';
import { rateLimit } from './rate-limit.js';

/** The table the shared counters live in (created by rate-limiter-flexible, `IF NOT EXISTS`). */
export const RATE_LIMIT_TABLE = 'rate_limits';

/**
 * The per-API-key rate limit (`rateLimit`, a fixed one-second window). On PostgreSQL every instance
 * counts in one table (rate-limiter-flexible's atomic upsert), so two instances share one budget rather
 * than each granting it in full; if the database cannot answer, each instance falls back to an in-memory
 * limiter of the same size (the `insuranceLimiter`) rather than failing requests. On SQLite (one instance
 * per data directory) it counts in memory, without a round trip.
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
  return rateLimit(perSecond, limiter, ' across all instances');
}
