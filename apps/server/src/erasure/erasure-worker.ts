import { setTimeout as sleep } from 'node:timers/promises';
import type { Clock } from '../common/clock.js';
import { newId } from '../common/ids.js';
import type { OutboxSignal } from '../events/event-outbox.js';
import { describeError, type Logger } from '../request-logging/logger.js';
import type { SubjectKey } from '../score-log/score-log-store.js';
import type { Storage } from '../storage/storage.js';
import type { BackgroundWorker } from '../workers/background-worker.js';
import type { ErasureConfig } from './erasure-config.js';
import { retentionCutoff } from './erasure-config.js';
import { type CompactedTable, compact, erasedTables, processErasure } from './erasure-processor.js';
import { claimErasure, insertErasure, releaseErasure } from './erasure-store.js';

export interface ErasureWorkerOptions {
  storage: Pick<Storage, 'db' | 'kind' | 'transact'>;
  config: ErasureConfig;
  subjectKey: SubjectKey;
  /** Notified when an erasure is accepted on this instance. */
  erasureQueue: OutboxSignal;
  /** Notified after an erasure's `subject.erased` event commits. */
  outbox: OutboxSignal;
  clock: Clock;
  logger: Logger;
  /** Compacts the erased bytes off the disk (erasure-processor.ts compact(); tests count its calls). */
  compact?: (storage: Pick<Storage, 'db' | 'kind'>, tables: readonly CompactedTable[]) => Promise<boolean>;
}

/**
 * Completes erasures in the background: takes open ones a tenant at a time, in turn (claimErasure: the
 * `erasures` row is the durable to-do, so an erasure accepted before a crash is resumed by whichever
 * instance takes it next), processes each in bounded batches (erasure-processor.ts), compacts what the
 * completed ones freed at most once per `compactIntervalMs`, and with `LOG_RETENTION` set, accepts a
 * `retention` erasure for each tenant whose records have expired. Woken by `erasureQueue`, else polls.
 */
export class ErasureWorker implements BackgroundWorker {
  readonly name = 'erasure';
  readonly #options: ErasureWorkerOptions;
  readonly #workerId = newId('wrk');
  #running = false;
  #stopping = new AbortController();
  #wake: AbortController | undefined;
  #loop: Promise<void> | undefined;
  #unsubscribe: (() => void) | undefined;
  #lastRetentionCheck = 0;
  /** The tenant whose erasure the worker last took: the next claim starts after it. */
  #lastTenant: string | undefined;
  /** Tables changed by erasures completed since the last compaction (see compact()): not yet compacted. */
  readonly #uncompacted = new Set<CompactedTable>();
  /** When the last compaction started (ms), or -Infinity. */
  #lastCompaction = Number.NEGATIVE_INFINITY;

  constructor(options: ErasureWorkerOptions) {
    this.#options = options;
  }

  get running(): boolean {
    return this.#running;
  }

  start(): void {
    this.#running = true;
    this.#unsubscribe = this.#options.erasureQueue.subscribe(() => this.#wake?.abort());
    this.#loop = this.#run();
  }

  async stop(): Promise<void> {
    this.#running = false;
    this.#unsubscribe?.();
    this.#stopping.abort();
    await this.#loop;
  }

  /** Completes what it can now: every open erasure not waiting for a run; resolves with how many completed. */
  async runOnce(): Promise<number> {
    const { storage, clock, config } = this.#options;
    await this.#checkRetention();
    let completed = 0;
    // Erasures that wait for a run stay claimed until the round ends, so the next claim reaches the ones
    // behind them (one tenant's erasure waiting for its hour-long upload held back every other tenant's).
    const waiting: string[] = [];
    try {
      for (;;) {
        if (!this.#running && this.#loop !== undefined) break;
        await this.#compactIfDue();
        const now = clock.now();
        // Not those found waiting this round, even should their claim lapse during a long one; tenants in
        // turn; not those still settling (they would only wait).
        const erasure = await claimErasure(storage.db, this.#workerId, now, config.leaseMs, {
          passOver: waiting,
          ...(this.#lastTenant !== undefined && { after: this.#lastTenant }),
          settledBy: new Date(now.getTime() - config.settleMs),
        });
        if (!erasure) break;
        this.#lastTenant = erasure.tenant_id;
        const outcome = await processErasure(erasure, {
          storage,
          subjectKey: this.#options.subjectKey,
          outbox: this.#options.outbox,
          now: () => clock.now(),
          batchSize: config.batchSize,
          lease: { workerId: this.#workerId, ms: config.leaseMs },
          stopping: () => this.#stopping.signal.aborted,
          completed: (counts) => {
            for (const table of erasedTables(counts)) this.#uncompacted.add(table);
          },
          settleMs: config.settleMs,
        });
        if (outcome === 'completed') completed += 1;
        else if (outcome === 'waiting') waiting.push(erasure.id);
        else {
          await releaseErasure(storage.db, erasure.id, this.#workerId);
          break;
        }
      }
    } finally {
      for (const id of waiting) await releaseErasure(storage.db, id, this.#workerId);
    }
    await this.#compactIfDue();
    return completed;
  }

  /**
   * Compacts the tables the erasures completed since the last compaction changed, once
   * `compactIntervalMs` has passed since the last one (else a later call does it: within the round, after
   * it, or in the next round, at most a poll interval later). One that fails or finds the WAL busy is tried
   * again after the interval.
   */
  async #compactIfDue(force = false): Promise<void> {
    const { storage, clock, config, logger } = this.#options;
    if (this.#uncompacted.size === 0) return;
    const now = clock.now().getTime();
    if (!force && now - this.#lastCompaction < config.compactIntervalMs) return;
    this.#lastCompaction = now;
    const tables = [...this.#uncompacted];
    this.#uncompacted.clear();
    let done = false;
    try {
      done = await (this.#options.compact ?? compact)(storage, tables);
    } catch (error) {
      logger.error('compacting erased bytes failed', describeError(error));
    }
    if (!done) {
      for (const table of tables) this.#uncompacted.add(table);
      logger.error(
        'erased bytes not yet compacted off the disk; trying again after ERASURE_COMPACT_INTERVAL',
      );
    }
  }

  /**
   * With `LOG_RETENTION`: for each tenant with records older than the cutoff since its last retention
   * erasure, accepts a `retention` erasure (one open per tenant at a time), processed like any other.
   */
  async #checkRetention(): Promise<void> {
    const { config, storage, clock } = this.#options;
    if (!config.retention) return;
    const now = clock.now();
    if (now.getTime() - this.#lastRetentionCheck < config.retentionCheckIntervalMs) return;
    this.#lastRetentionCheck = now.getTime();
    const cutoff = retentionCutoff(config.retention, now).toISOString();
    const tenants = await storage.db.selectFrom('tenants').select('id').execute();
    for (const { id: tenantId } of tenants) {
      const last = await storage.db
        .selectFrom('erasures')
        .select(['status', 'before'])
        .where('tenant_id', '=', tenantId)
        .where('kind', '=', 'retention')
        .orderBy('id', 'desc')
        .limit(1)
        .executeTakeFirst();
      if (last?.status === 'pending') continue;
      const from = last?.before ?? '';
      const expired = await storage.db
        .selectFrom('log_leaves')
        .select('cid')
        .where('tenant_id', '=', tenantId)
        .where('created_at', '>=', from)
        .where('created_at', '<', cutoff)
        .limit(1)
        .executeTakeFirst();
      const expiredRun = await storage.db
        .selectFrom('runs')
        .select('id')
        .where('tenant_id', '=', tenantId)
        .where('created_at', '<', cutoff)
        .where('items', '<>', '[]')
        .where('status', 'in', ['completed', 'failed'])
        .limit(1)
        .executeTakeFirst();
      if (!expired && !expiredRun) continue;
      await insertErasure(storage.db, {
        id: newId('era'),
        tenantId,
        kind: 'retention',
        subject: null,
        subjectKey: null,
        before: cutoff,
        now,
        // Records before the previous cutoff were erased by the previous retention erasure.
        progress: `records:${from}|`,
      });
    }
  }

  async #run(): Promise<void> {
    const { logger, config } = this.#options;
    while (this.#running) {
      this.#wake = new AbortController();
      try {
        const completed = await this.runOnce();
        if (completed > 0) logger.info('erasures completed', { completed });
      } catch (error) {
        logger.error('erasure failed; retrying', describeError(error));
      }
      if (!this.#running) break;
      try {
        await sleep(config.pollIntervalMs, undefined, {
          signal: AbortSignal.any([this.#stopping.signal, this.#wake.signal]),
        });
      } catch {
        // Woken, or stopping.
      }
    }
    // What the last erasures freed, before the server stops.
    await this.#compactIfDue(true);
  }
}
