import { type Kysely, sql } from 'kysely';
import type { Clock } from '../common/clock.js';
import { insertEvents, newEvent, type OutboxSignal } from '../events/event-outbox.js';
import { describeError, type Logger } from '../request-logging/logger.js';
import type { Database } from '../storage/database.js';
import { PollingWorker } from '../workers/polling-worker.js';

/** Runs looked at per pass; more wait for the next one, which follows at once. */
const RUNS_PER_PASS = 100;

/** What the notifier reads and writes. */
export interface RunLogCompletionOptions {
  db: Kysely<Database>;
  outbox: Pick<OutboxSignal, 'notify'>;
  clock: Clock;
  logger: Logger;
  /** How often it looks without being told of a checkpoint (another instance may have signed it). */
  pollIntervalMs: number;
}

/**
 * Sends each completed run's `run.completed` once every item's log record is in a signed checkpoint, and
 * names that checkpoint (the tenant's latest, whose tree holds every leaf already written): a run
 * completes with `log_event_pending = 1`, and a pass finds such runs (a partial index), checks that none of
 * their items' records still waits for a leaf (one primary-key probe per item, at most 1000), and writes
 * the event and clears the flag in one transaction, fenced on the flag, so it is sent once whatever
 * instance does it. Woken by this instance's log sequencer after each checkpoint (`logSigned`), and every
 * `pollIntervalMs` otherwise.
 */
export class RunLogCompletion extends PollingWorker {
  readonly name = 'run-log-completion';
  readonly #options: RunLogCompletionOptions;

  constructor(options: RunLogCompletionOptions) {
    super();
    this.#options = options;
  }

  protected get intervalMs(): number {
    return this.#options.pollIntervalMs;
  }

  /** A tenant's checkpoint was committed: look at once. */
  logSigned(): void {
    this.wake();
  }

  /** One pass: sends the events of the waiting runs whose records are all signed; answers how many. */
  async releaseOnce(): Promise<number> {
    const { db, outbox, clock } = this.#options;
    const waiting = await db
      .selectFrom('runs')
      .select(['id', 'tenant_id', 'item_count', 'succeeded', 'failed', 'escalated', 'completed_at'])
      .where('log_event_pending', '=', 1)
      .limit(RUNS_PER_PASS)
      .execute();
    let sent = 0;
    for (const run of waiting) {
      if (await hasUnsignedRecord(db, run.id, run.tenant_id)) continue;
      const wrote = await db.transaction().execute(async (trx) => {
        const cleared = await trx
          .updateTable('runs')
          .set({ log_event_pending: 0 })
          .where('id', '=', run.id)
          .where('log_event_pending', '=', 1)
          .executeTakeFirst();
        if (Number(cleared.numUpdatedRows) !== 1) return false;
        const checkpoint = await trx
          .selectFrom('log_checkpoints')
          .select(['tree_size', 'root_hash', 'note'])
          .where('tenant_id', '=', run.tenant_id)
          .orderBy('tree_size', 'desc')
          .limit(1)
          .executeTakeFirst();
        const now = clock.now();
        const event = newEvent(
          run.tenant_id,
          'run.completed',
          {
            run_id: run.id,
            status: 'completed',
            item_count: run.item_count,
            counts: { succeeded: run.succeeded, failed: run.failed, escalated: run.escalated },
            completed_at: run.completed_at ?? now.toISOString(),
            ...(checkpoint && {
              log_checkpoint: {
                origin: checkpoint.note.slice(0, checkpoint.note.indexOf('\n')),
                tree_size: Number(checkpoint.tree_size),
                root_hash: Buffer.from(checkpoint.root_hash).toString('base64'),
                note: checkpoint.note,
              },
            }),
          },
          now,
        );
        await insertEvents(trx, [event]);
        return true;
      });
      if (wrote) sent++;
    }
    if (sent > 0) outbox.notify();
    return sent;
  }

  /** A full pass (RUNS_PER_PASS runs released) may have left more: the next starts at once. */
  protected async round(): Promise<boolean> {
    return (await this.releaseOnce()) >= RUNS_PER_PASS;
  }

  protected roundFailed(error: unknown): void {
    this.#options.logger.error('run.completed release failed', describeError(error));
  }
}

/** Whether an item of the run has a log record still waiting for its leaf. */
async function hasUnsignedRecord(db: Kysely<Database>, runId: string, tenantId: string): Promise<boolean> {
  const { rows } = await sql<{ waiting: number }>`
    select 1 as waiting from run_items i
    join log_records r on r.tenant_id = ${tenantId} and r.cid = i.log_cid
    where i.run_id = ${runId} and i.log_cid is not null
      and not exists (
        select 1 from log_leaves l
        where l.tenant_id = r.tenant_id and l.created_at = r.created_at and l.cid = r.cid
      )
    limit 1
  `.execute(db);
  return rows.length > 0;
}
