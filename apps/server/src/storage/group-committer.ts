import { tracing } from '../tracing/tracing.js';
import { commitIsolated } from './isolated-commit.js';

/** The default cap on the number of items one flush commits. */
export const DEFAULT_GROUP_COMMIT_MAX_BATCH = 512;

/** Counters of a GroupCommitter, for tests and metrics. */
export interface GroupCommitStats {
  /** Flushes attempted: one transaction (and one disk flush) each. */
  flushes: number;
  /** Flushes whose transaction failed; every item of those was rejected (with `isolate`, only the failing ones). */
  failedFlushes: number;
  /** Items acknowledged as committed. */
  committedItems: number;
  /** The most items one flush carried. */
  largestBatch: number;
}

/** Thrown by `add` once the committer is closing: nothing new is accepted that could be left unflushed. */
export class GroupCommitterClosedError extends Error {
  override readonly name = 'GroupCommitterClosedError';
  constructor() {
    super('the group committer is closed');
  }
}

interface Pending<T> {
  item: T;
  resolve: () => void;
  reject: (error: unknown) => void;
  /** The tracing context it was added in, when tracing is on and the committer's commits are traced. */
  context?: unknown;
}

/**
 * Groups items that arrive together into one commit. A durable commit costs a disk flush, and a flush per
 * request stalls everything behind it; one flush for everything that arrived meanwhile amortizes it.
 *
 * The first item schedules a flush with `setImmediate`, so everything added in the same turn of the event
 * loop (and the I/O polled before it) rides along. One flush runs at a time; items added during it wait for
 * the next. A batch holds at most `maxBatch` items. `add` resolves only after the commit of its batch
 * succeeded and rejects with the commit's error otherwise: nothing is acknowledged that is not committed.
 */
export class GroupCommitter<T> {
  readonly #commit: (batch: readonly T[]) => Promise<void>;
  readonly #maxBatch: number;
  readonly #isolate: boolean;
  readonly #lingerMs: number;
  readonly #span: string | undefined;
  /** When the last flush started (performance.now()), for `lingerMs`. */
  #lastFlushAt = Number.NEGATIVE_INFINITY;
  #queue: Pending<T>[] = [];
  #scheduled = false;
  #flushing = false;
  #closed = false;
  #idleWaiters: (() => void)[] = [];
  readonly #stats: GroupCommitStats = { flushes: 0, failedFlushes: 0, committedItems: 0, largestBatch: 0 };

  /**
   * `commit` must write the whole batch in one transaction, or fail as a whole. With `isolate`, a failed
   * batch is split until the failing items are alone (see commitIsolated): only they are rejected, the
   * others commit, so one item never fails another's request. With `lingerMs`, a flush starts no sooner
   * than that long after the previous one started: fewer, larger commits, for items whose waiters are
   * not requests (a request's latency would grow by it).
   */
  constructor(
    commit: (batch: readonly T[]) => Promise<void>,
    maxBatch = DEFAULT_GROUP_COMMIT_MAX_BATCH,
    options: { isolate?: boolean; lingerMs?: number; span?: string } = {},
  ) {
    if (!Number.isInteger(maxBatch) || maxBatch < 1)
      throw new RangeError(`maxBatch must be >= 1, got ${maxBatch}`);
    this.#commit = commit;
    this.#maxBatch = maxBatch;
    this.#isolate = options.isolate ?? false;
    this.#lingerMs = options.lingerMs ?? 0;
    this.#span = options.span;
  }

  /** Queues an item; resolves once it is committed, rejects if its batch's commit fails. */
  add(item: T): Promise<void> {
    if (this.#closed) return Promise.reject(new GroupCommitterClosedError());
    return new Promise<void>((resolve, reject) => {
      const pending: Pending<T> = { item, resolve, reject };
      if (tracing && this.#span !== undefined) pending.context = tracing.captureContext();
      this.#queue.push(pending);
      this.#schedule();
    });
  }

  /** Resolves once every item added so far is settled (committed or rejected). */
  drain(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Refuses new items, then waits for the queued ones to be flushed. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.drain();
  }

  /** A snapshot of the counters. */
  get stats(): GroupCommitStats {
    return { ...this.#stats };
  }

  /** Items waiting for a flush (not counting the one in flight). */
  get queued(): number {
    return this.#queue.length;
  }

  #isIdle(): boolean {
    return this.#queue.length === 0 && !this.#flushing && !this.#scheduled;
  }

  #schedule(): void {
    if (this.#scheduled || this.#flushing) return;
    this.#scheduled = true;
    const run = () => {
      this.#scheduled = false;
      void this.#flush();
    };
    const wait = this.#lastFlushAt + this.#lingerMs - performance.now();
    if (wait > 0) setTimeout(run, Math.ceil(wait));
    else setImmediate(run);
  }

  async #flush(): Promise<void> {
    const batch = this.#queue.splice(0, this.#maxBatch);
    if (batch.length === 0) return this.#settleIdle();
    this.#flushing = true;
    this.#lastFlushAt = performance.now();
    this.#stats.flushes += 1;
    this.#stats.largestBatch = Math.max(this.#stats.largestBatch, batch.length);
    try {
      const items = batch.map((pending) => pending.item);
      // With tracing on, a span around the transaction (one SQLite thread message, or one PostgreSQL
      // transaction), parented by the first item's request and linked to every item's.
      if (tracing && this.#span !== undefined)
        await tracing.inBatchSpan(
          this.#span,
          batch.map((pending) => pending.context),
          () => this.#commit(items),
        );
      else await this.#commit(items);
      this.#stats.committedItems += batch.length;
      for (const pending of batch) pending.resolve();
    } catch (error) {
      this.#stats.failedFlushes += 1;
      if (this.#isolate && batch.length > 1) await this.#settleIsolated(batch);
      else for (const pending of batch) pending.reject(error);
    } finally {
      this.#flushing = false;
    }
    // Items that arrived during the flush go in the next one, a loop turn later so that requests
    // polled meanwhile can join it.
    if (this.#queue.length > 0) this.#schedule();
    else this.#settleIdle();
  }

  async #settleIsolated(batch: Pending<T>[]): Promise<void> {
    const errors = await commitIsolated(
      this.#commit,
      batch.map((pending) => pending.item),
    );
    batch.forEach((pending, n) => {
      if (errors[n] === undefined) {
        this.#stats.committedItems += 1;
        pending.resolve();
      } else pending.reject(errors[n]);
    });
  }

  #settleIdle(): void {
    if (!this.#isIdle()) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const wake of waiters) wake();
  }
}
