import { type Kysely, sql } from 'kysely';
import type { Clock } from '../common/clock.js';
import { describeError, type Logger } from '../request-logging/logger.js';
import type { Database } from '../storage/database.js';
import { PollingWorker } from '../workers/polling-worker.js';
import { IDEMPOTENCY_KEY_TTL_MS } from './idempotent-create.js';

/** How often expired idempotency keys are purged. */
export const IDEMPOTENCY_PURGE_INTERVAL_MS = 10 * 60 * 1000;
/** Keys deleted per statement: each is a short transaction, so the one SQLite connection is never held long. */
export const IDEMPOTENCY_PURGE_BATCH = 500;

export interface IdempotencyPurgeOptions {
  db: Kysely<Database>;
  clock: Clock;
  logger: Logger;
  intervalMs?: number;
  batchSize?: number;
}

/**
 * Deletes the idempotency keys older than 24 hours (`IDEMPOTENCY_KEY_TTL_MS`), which are never replayed
 * again (`idempotentCreate` ignores them), so the table holds about a day of creates, not every create
 * ever made. Runs at start and then every `intervalMs`, in batches of at most `batchSize` keys, oldest
 * first (through `idempotency_keys_created_idx`), yielding between batches. Several instances may purge at
 * once: each deletes what is still there.
 */
export class IdempotencyPurge extends PollingWorker {
  readonly name = 'idempotency-purge';
  readonly #options: IdempotencyPurgeOptions;

  constructor(options: IdempotencyPurgeOptions) {
    super();
    this.#options = options;
  }

  protected get intervalMs(): number {
    return this.#options.intervalMs ?? IDEMPOTENCY_PURGE_INTERVAL_MS;
  }

  /** Deletes every key older than 24 hours by the clock, batch by batch; resolves with how many. */
  async purgeOnce(): Promise<number> {
    const { db, clock } = this.#options;
    const batchSize = this.#options.batchSize ?? IDEMPOTENCY_PURGE_BATCH;
    const cutoff = new Date(clock.now().getTime() - IDEMPOTENCY_KEY_TTL_MS).toISOString();
    let purged = 0;
    for (;;) {
      // Row values in IN: the same statement on SQLite and PostgreSQL.
      const result = await sql`
        delete from idempotency_keys where (api_key_id, key) in (
          select api_key_id, key from idempotency_keys
          where created_at < ${cutoff} order by created_at limit ${batchSize})`.execute(db);
      const deleted = Number(result.numAffectedRows ?? 0);
      purged += deleted;
      // The rest waits for the next round when the worker is stopping.
      if (deleted < batchSize || this.stopping.aborted) break;
      await new Promise((resolve) => setImmediate(resolve));
    }
    return purged;
  }

  protected async round(): Promise<boolean> {
    const purged = await this.purgeOnce();
    if (purged > 0) this.#options.logger.info('purged expired idempotency keys', { purged });
    return false;
  }

  protected roundFailed(error: unknown): void {
    this.#options.logger.error('purging idempotency keys failed', describeError(error));
  }
}
