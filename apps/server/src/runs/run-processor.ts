import type { Problem, RunCounts } from '@scenario-scoring/api-types';
import type { Clock } from '../common/clock.js';
import { problem } from '../errors/problem.js';
import { newEvent, type OutboxSignal } from '../events/event-outbox.js';
import type { Logger } from '../request-logging/logger.js';
import { isStorageBusy } from '../storage/storage-busy.js';
import type { BackgroundPacer } from '../workers/background-pacer.js';
import type { ScoredBatch } from './run-batch.js';
import type { RunConfig } from './run-config.js';
import { type ClaimedRun, claimOf, type RunStore } from './run-store.js';
import type { ScoringPool } from './scoring-pool.js';

/** The largest batch scored while the pacer says clients wait on requests. */
const BUSY_BATCH_SIZE = 100;

/** What processing a claimed run needs. */
export interface RunProcessorContext {
  store: RunStore;
  config: RunConfig;
  clock: Clock;
  logger: Logger;
  /**
   * Notified after a failed run's `run.failed` commits, to wake the delivery workers (a batch's events
   * wake them from its commit: RunBatchCommitter).
   */
  outbox: OutboxSignal;
  workerId: string;
  /** Scores batches, on threads when it has any. */
  pool: ScoringPool;
  /** True once the worker is stopping: the run is released after the batch in flight. */
  stopping(): boolean;
  /** Waits `ms`; injectable so tests need not wait for backoff. */
  sleep(ms: number): Promise<void>;
  /** Each batch commit runs through it, giving way to requests clients wait on (none: at once). */
  pacer?: Pick<BackgroundPacer, 'run' | 'foregroundBusy'>;
}

/** How processing a claimed run ended, for the worker's logs and tests. */
export type RunOutcome = 'completed' | 'failed' | 'released' | 'lost';

/**
 * Scores a claimed run from its `next_index` to the end, one transaction per batch, the next batches
 * being scored on the pool (one per scoring thread and one more, in parallel) while the current one
 * commits. Each batch writes its items' results, their log records and `policy.escalated` events, and
 * advances `next_index` and the counts, fenced on this claim and the index it started from, so an item is never
 * committed twice even when a lease expired and another worker took the run over. The last batch ends the
 * run `completed`, its `run.completed` left to be raised once every item's record is in a signed
 * checkpoint (run-log-completion.ts). A passed deadline, or a batch whose
 * commit still fails after `storageRetries` retries (a busy database's: for `BUSY_RETRY_SLEEP_MS` of backoff),
 * ends the run `failed` with `run.failed`.
 */
export async function processRun(run: ClaimedRun, context: RunProcessorContext): Promise<RunOutcome> {
  const { store, config, clock } = context;
  const claim = claimOf(run, context.workerId);
  const itemCount = run.itemCount;
  // Batches scored ahead of the one committing: enough to keep every scoring thread busy with this run, and
  // one more, so that a thread that has just finished a batch finds the next one already asked for while
  // the commit before it still holds the database (a 200,000-item NDJSON run on SQLite: 12,104-12,207 ->
  // 13,458-13,569 items/s; three more instead of one measured no better: docs/benchmarks.md). Without
  // scoring threads (RUN_SCORING_THREADS=0) batches are scored on the event loop: one ahead.
  const ahead = context.pool.size === 0 ? 1 : context.pool.size + 1;
  // Batches not committed yet, in item order; the first is the next to commit.
  const window: PendingBatch[] = [];
  let scoredTo = run.nextIndex;
  const fill = () => {
    // A run with nothing left to score still commits one (empty) batch, the one that completes it.
    while (window.length === 0 || (window.length <= ahead && scoredTo < itemCount)) {
      // Shorter batches while clients wait on requests: each commit holds the event loop and the
      // database's writer for less time.
      const size = context.pacer?.foregroundBusy
        ? Math.min(config.batchSize, BUSY_BATCH_SIZE)
        : config.batchSize;
      const to = Math.min(scoredTo + size, itemCount);
      const from = scoredTo;
      const scored =
        run.input === 'ndjson'
          ? store
              .inputs(run.id, from, to)
              .then((lines) =>
                context.pool.score({ runId: run.id, tenantId: run.tenantId, ...lines }, from, clock.now()),
              )
          : context.pool.score(
              { runId: run.id, tenantId: run.tenantId, items: run.items.slice(from, to) },
              from,
              clock.now(),
            );
      window.push({ to, scored });
      scoredTo = to;
    }
  };
  let next = run.nextIndex;
  let counts = run.counts;
  if (run.claims > config.maxClaims) return failRun(run, context, counts, interruptedProblem(run));
  for (;;) {
    if (context.stopping()) {
      discard(window);
      await store.release(claim);
      return 'released';
    }
    if (run.deadlineAt !== null && clock.now().toISOString() >= run.deadlineAt) {
      discard(window);
      return failRun(run, context, counts, deadlineProblem(run, next));
    }
    fill();
    const current = window[0] as PendingBatch;
    const batch = await current.scored;
    const completes = current.to === itemCount;
    const after = addCounts(counts, batch.counts);
    // The run ends, and its lease is renewed, as of the commit, not of the scoring.
    const commitNow = clock.now();
    const commit = {
      ...claim,
      tenantId: run.tenantId,
      fromIndex: next,
      ...batch,
      counts: after,
      now: commitNow,
      leaseMs: config.leaseMs,
      completes,
      consumesInputs: run.input === 'ndjson',
    };
    const committed = await commitWithRetries(
      () => (context.pacer ? context.pacer.run(() => store.commitBatch(commit)) : store.commitBatch(commit)),
      context,
      run.id,
    );
    if (committed === 'lost') {
      discard(window);
      return 'lost';
    }
    if (committed === 'failed' || committed === 'busy') {
      discard(window);
      const failing =
        committed === 'busy'
          ? `The database stayed busy (another writer held it) through ${BUSY_RETRY_SLEEP_MS / 1000} s of retries`
          : `Storage kept failing after ${config.storageRetries} retries`;
      const detail = `${failing}; ${next} of ${itemCount} items were attempted.`;
      return failRun(run, context, counts, problem('storage_unavailable', { detail }));
    }
    // The delivery workers were woken by the commit if it wrote events (RunBatchCommitter).
    window.shift();
    next = current.to;
    counts = after;
    if (completes) return 'completed';
    // Let requests waiting on the event loop through between batches.
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** A batch being scored: where it ends, and its rows once scored. */
interface PendingBatch {
  to: number;
  scored: Promise<ScoredBatch>;
}

function addCounts(a: RunCounts, b: RunCounts): RunCounts {
  return {
    succeeded: a.succeeded + b.succeeded,
    failed: a.failed + b.failed,
    escalated: a.escalated + b.escalated,
  };
}

/** Drops batches scored ahead that will not be committed (their scoring errors, if any, are moot). */
function discard(batches: readonly PendingBatch[]): void {
  for (const batch of batches) batch.scored.catch(() => {});
}

/**
 * How long (in backoff slept) a batch commit the database refused as busy is retried past `storageRetries`:
 * another connection holding SQLite's write lock fails a wait after 100 ms once one has run out (not 5 s:
 * storage/sqlite-thread.ts), so without this a lock held a few seconds would fail the run.
 */
export const BUSY_RETRY_SLEEP_MS = 30_000;

/** The longest backoff between two attempts of a batch commit (unless `storageRetryBackoffMs` is longer). */
const MAX_RETRY_BACKOFF_MS = 5_000;

async function commitWithRetries(
  commit: () => Promise<boolean>,
  context: RunProcessorContext,
  runId: string,
): Promise<'committed' | 'lost' | 'failed' | 'busy'> {
  const { storageRetries, storageRetryBackoffMs } = context.config;
  const maxBackoff = Math.max(MAX_RETRY_BACKOFF_MS, storageRetryBackoffMs);
  let slept = 0;
  for (let attempt = 0; ; attempt++) {
    try {
      return (await commit()) ? 'committed' : 'lost';
    } catch (error) {
      context.logger.error('run batch commit failed', { runId, attempt, error: String(error) });
      const busy = isStorageBusy(error);
      if (attempt >= storageRetries && !(busy && slept < BUSY_RETRY_SLEEP_MS))
        return busy ? 'busy' : 'failed';
      const backoff = Math.min(storageRetryBackoffMs * 2 ** Math.min(attempt, 30), maxBackoff);
      slept += backoff;
      await context.sleep(backoff);
    }
  }
}

async function failRun(
  run: ClaimedRun,
  context: RunProcessorContext,
  counts: ClaimedRun['counts'],
  error: Problem,
): Promise<RunOutcome> {
  const now = context.clock.now();
  const event = newEvent(
    run.tenantId,
    'run.failed',
    {
      run_id: run.id,
      status: 'failed',
      item_count: run.itemCount,
      counts,
      completed_at: now.toISOString(),
      error,
    },
    now,
  );
  try {
    const ended = await context.store.fail({ ...claimOf(run, context.workerId), error, event, now });
    if (!ended) return 'lost';
    context.outbox.notify();
    return 'failed';
  } catch (cause) {
    // Storage is down: leave the run to its lease; a worker retries it once storage answers again.
    context.logger.error('run could not be marked failed', { runId: run.id, error: String(cause) });
    await context.store.release(claimOf(run, context.workerId)).catch(() => {});
    return 'released';
  }
}

function interruptedProblem(run: ClaimedRun): Problem {
  return problem('internal_error', {
    detail: `The run was interrupted ${run.claims - 1} times without finishing (its server died or lost its lease while processing it); ${run.nextIndex} of ${run.itemCount} items were attempted.`,
  });
}

function deadlineProblem(run: ClaimedRun, attempted: number): Problem {
  const seconds = Math.round((Date.parse(run.deadlineAt ?? '') - Date.parse(run.createdAt)) / 1000);
  return problem('run_deadline_exceeded', {
    detail: `The run did not complete within its deadline of ${seconds} seconds; ${attempted} of ${run.itemCount} items were attempted.`,
  });
}
