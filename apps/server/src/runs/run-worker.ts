import type { Clock } from '../common/clock.js';
import { newId } from '../common/ids.js';
import type { OutboxSignal } from '../events/event-outbox.js';
import type { Logger } from '../request-logging/logger.js';
import type { BackgroundPacer } from '../workers/background-pacer.js';
import type { BackgroundWorker } from '../workers/background-worker.js';
import type { RunConfig } from './run-config.js';
import { processRun, type RunOutcome } from './run-processor.js';
import { claimOf, type RunStore } from './run-store.js';
import { ScoringPool } from './scoring-pool.js';

/** What a run worker is built from. */
export interface RunWorkerOptions {
  store: RunStore;
  config: RunConfig;
  clock: Clock;
  logger: Logger;
  /** Notified when a run is created in this process: the worker claims it at once instead of at the next poll. */
  runQueue: OutboxSignal;
  /** Notified after events commit. */
  outbox: OutboxSignal;
  /** This worker's claim id; a new `wrk_` id by default. */
  workerId?: string;
  /** Waits between storage retries; a timer by default. */
  sleep?: (ms: number) => Promise<void>;
  /** Where batches are scored; by default a pool of `config.scoringThreads` threads, closed by stop(). */
  pool?: ScoringPool;
  /** Paces the batch commits while clients wait on requests; none paces nothing. */
  pacer?: BackgroundPacer;
  /** Told how each claimed run ended (tests). */
  onRunEnded?: (runId: string, outcome: RunOutcome) => void;
}

/**
 * The durable run worker: claims unfinished runs with a lease (PostgreSQL: `FOR UPDATE SKIP LOCKED`), up
 * to `concurrency` at a time, shared fairly among tenants (see RunStore.claim), and scores each from its
 * last committed batch (see `processRun`). A run left by a crashed instance is claimed again once its
 * lease expires. Wakes when a run is created in this process, polls otherwise; `stop()` finishes the
 * batches in flight and releases the claims.
 */
export class RunWorker implements BackgroundWorker {
  readonly name = 'run-scoring';
  readonly #options: RunWorkerOptions;
  readonly #workerId: string;
  readonly #active = new Set<Promise<void>>();
  /** The runs in #active by tenant, and the tenant last given a slot: claims share slots fairly (RunShare). */
  readonly #heldByTenant = new Map<string, number>();
  #lastServed: string | undefined;
  #running = false;
  #stopping = false;
  #loop: Promise<void> | undefined;
  #wakeUp: (() => void) | undefined;
  #woken = false;
  #unsubscribe: (() => void) | undefined;
  #pool: ScoringPool | undefined;

  constructor(options: RunWorkerOptions) {
    this.#options = options;
    this.#workerId = options.workerId ?? newId('wrk');
  }

  get running(): boolean {
    return this.#running;
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#pool = this.#options.pool ?? new ScoringPool(this.#options.config.scoringThreads);
    this.#unsubscribe = this.#options.runQueue.subscribe(() => this.#wake());
    this.#loop = this.#claimLoop();
  }

  async stop(): Promise<void> {
    if (!this.#running) return;
    this.#stopping = true;
    this.#unsubscribe?.();
    this.#wake();
    await this.#loop;
    await Promise.all(this.#active);
    if (!this.#options.pool) await this.#pool?.close();
    this.#running = false;
  }

  #wake(): void {
    this.#woken = true;
    this.#wakeUp?.();
  }

  async #claimLoop(): Promise<void> {
    const { store, config, clock, logger } = this.#options;
    while (!this.#stopping) {
      this.#woken = false;
      let claimedAll = false;
      const room = config.concurrency - this.#active.size;
      if (room > 0) {
        try {
          // Every free slot in one claim: slots freed together (a burst of runs) fill at once, not one
          // claim's round trip after another. Shared among tenants: one with fewer runs here goes first.
          const runs = await store.claim(this.#workerId, clock.now(), config.leaseMs, room, {
            held: this.#heldByTenant,
            ...(this.#lastServed !== undefined && { after: this.#lastServed }),
          });
          for (const run of runs) {
            if (this.#stopping) {
              // Each one given back, even when another's release failed (its lease then expires).
              await store.release(claimOf(run, this.#workerId)).catch(() => {});
              continue;
            }
            const { tenantId } = run;
            this.#heldByTenant.set(tenantId, (this.#heldByTenant.get(tenantId) ?? 0) + 1);
            this.#lastServed = tenantId;
            const task = this.#process(run).finally(() => {
              this.#active.delete(task);
              const left = (this.#heldByTenant.get(tenantId) ?? 1) - 1;
              if (left > 0) this.#heldByTenant.set(tenantId, left);
              else this.#heldByTenant.delete(tenantId);
              this.#wake();
            });
            this.#active.add(task);
          }
          claimedAll = runs.length === room;
        } catch (error) {
          logger.error('run claim failed', { error: String(error) });
        }
      }
      // Another claim at once while there may be more runs and room for them (runs ended meanwhile); else wait.
      if (claimedAll && this.#active.size < config.concurrency) continue;
      if (!this.#woken) await this.#sleepUntilWoken(config.pollIntervalMs);
    }
  }

  #sleepUntilWoken(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.#wakeUp = () => {
        this.#wakeUp = undefined;
        done();
      };
    });
  }

  async #process(run: Parameters<typeof processRun>[0]): Promise<void> {
    const { store, config, clock, logger, outbox } = this.#options;
    const sleep = this.#options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
    try {
      const outcome = await processRun(run, {
        store,
        config,
        clock,
        logger,
        outbox,
        workerId: this.#workerId,
        pool: this.#pool as ScoringPool,
        stopping: () => this.#stopping,
        sleep,
        ...(this.#options.pacer && { pacer: this.#options.pacer }),
      });
      logger.info('run processed', { runId: run.id, outcome, from: run.nextIndex, items: run.itemCount });
      this.#options.onRunEnded?.(run.id, outcome);
    } catch (error) {
      logger.error('run processing failed', { runId: run.id, error: String(error) });
      await store.release(claimOf(run, this.#workerId)).catch(() => {});
    }
  }
}
