import type { Problem, ScoreRequest } from '@scenario-scoring/api-types';
import { type Kysely, type Selectable, sql, type Transaction } from 'kysely';
import { insertEvents, type OutboxEvent, type OutboxSignal } from '../events/event-outbox.js';
import { releasedInputsUsage } from '../quota/tenant-usage.js';
import type { SubjectKey } from '../score-log/score-log-store.js';
import type { Database, RunItemsTable, RunsTable } from '../storage/database.js';
import type { Storage } from '../storage/storage.js';
import type { BatchSource, RejectedItem } from './run-batch.js';
import { RunBatchCommitter } from './run-batch-committer.js';
import type { BatchCommit, RunClaim } from './run-claim.js';
import { type ClaimedRun, claimRuns, type RunShare } from './run-claims.js';
import { sweepAbandonedUploads } from './run-upload-sweep.js';

export type { BatchCommit, RunClaim } from './run-claim.js';
export type { ClaimedRun, RunShare } from './run-claims.js';

/** A run as the API shows it: every column but the submitted items and the worker's claim. */
export type RunRecord = Omit<
  Selectable<RunsTable>,
  'items' | 'locked_until' | 'locked_by' | 'claims' | 'log_event_pending'
>;

/** The columns of a RunRecord. */
const RUN_COLUMNS = [
  'id',
  'tenant_id',
  'status',
  'input',
  'item_count',
  'next_index',
  'succeeded',
  'failed',
  'escalated',
  'created_at',
  'started_at',
  'completed_at',
  'deadline_at',
  'error',
] as const;

/** The claim `workerId` holds on `run`, which fences its writes. */
export function claimOf(run: ClaimedRun, workerId: string): RunClaim {
  return { runId: run.id, workerId, claims: run.claims };
}

/** Ending a run `failed`, fenced on the claim. */
export interface RunFailure extends RunClaim {
  error: Problem;
  /** The `run.failed` event. */
  event: OutboxEvent;
  now: Date;
}

/** The run queries the worker uses; tests wrap it to inject storage faults. */
export interface RunStore {
  /**
   * Claims unfinished runs nobody holds, up to `limit` (1 by default), for `leaseMs`, shared fairly among
   * tenants (see RunShare and claimRuns). Returned in the order they were chosen; none when there is none.
   */
  claim(
    workerId: string,
    now: Date,
    leaseMs: number,
    limit?: number,
    share?: RunShare,
  ): Promise<ClaimedRun[]>;
  /**
   * Commits a batch, possibly in one transaction with other runs' batches (see RunBatchCommitter); false
   * when the claim was lost (another worker took the run over), so nothing was written.
   */
  commitBatch(batch: BatchCommit): Promise<boolean>;
  /** Ends a run `failed` with its `run.failed` event; false when the claim was lost. */
  fail(failure: RunFailure): Promise<boolean>;
  /**
   * Gives a claim up so another worker (or this one, later) resumes the run; a released claim does not
   * count toward `RUN_MAX_CLAIMS`.
   */
  release(claim: RunClaim): Promise<void>;
  /**
   * The items `from` to `to` (exclusive) of a run submitted as NDJSON, as BatchSource takes them: the
   * valid ones, and for each line that is not a valid item a placeholder and its problem (`rejected`).
   */
  inputs(runId: string, from: number, to: number): Promise<Pick<BatchSource, 'items' | 'rejected'>>;
}

/** How often (at most) a worker's claims also sweep abandoned uploads away (run-upload.ts). */
const UPLOAD_SWEEP_INTERVAL_MS = 60_000;

/** The RunStore over the server's storage. */
export function createRunStore(
  storage: Pick<Storage, 'db' | 'kind' | 'transact'>,
  options: { subjectKey?: SubjectKey; outbox?: Pick<OutboxSignal, 'notify'> } = {},
): RunStore {
  const { db, kind } = storage;
  const committer = new RunBatchCommitter(storage, { group: kind === 'sqlite', ...options });
  let sweptAt = Number.NEGATIVE_INFINITY;
  return {
    async claim(workerId, now, leaseMs, limit = 1, share = {}) {
      if (now.getTime() - sweptAt >= UPLOAD_SWEEP_INTERVAL_MS) {
        sweptAt = now.getTime();
        await sweepAbandonedUploads(storage, now).catch(() => {});
      }
      return claimRuns(storage, { workerId, now, leaseMs, limit, share });
    },

    async inputs(runId, from, to) {
      const rows = await db
        .selectFrom('run_inputs')
        .select(['item_index', 'subject', 'item', 'error'])
        .where('run_id', '=', runId)
        .where('item_index', '>=', from)
        .where('item_index', '<', to)
        .orderBy('item_index')
        .execute();
      if (rows.length !== to - from)
        throw new Error(`run ${runId} has ${rows.length} of its lines ${from} to ${to - 1}`);
      const items: ScoreRequest[] = [];
      const rejected: (RejectedItem | null)[] = [];
      for (const row of rows) {
        if (row.item === null) {
          const subject = row.subject ?? '';
          items.push({ subject, context: { jurisdiction: '' } } as ScoreRequest);
          rejected.push({ subject, error: row.error ?? '{}' });
        } else {
          items.push(JSON.parse(row.item) as ScoreRequest);
          rejected.push(null);
        }
      }
      return { items, rejected };
    },

    commitBatch: (batch) => committer.commit(batch),

    async fail(failure) {
      return db.transaction().execute(async (trx) => {
        const ended = await trx
          .updateTable('runs')
          .set({
            status: 'failed',
            completed_at: failure.now.toISOString(),
            error: JSON.stringify(failure.error),
            locked_by: null,
            locked_until: null,
          })
          .where('id', '=', failure.runId)
          .where('locked_by', '=', failure.workerId)
          .where('claims', '=', failure.claims)
          .where('status', '=', 'running')
          .executeTakeFirst();
        if (Number(ended.numUpdatedRows) !== 1) return false;
        await insertEvents(trx, [failure.event]);
        // An NDJSON run's lines not attempted are never needed again (nor counted in its tenant's usage).
        await trx.executeQuery(releasedInputsUsage(trx, failure.runId, failure.now));
        await trx.deleteFrom('run_inputs').where('run_id', '=', failure.runId).execute();
        return true;
      });
    },

    async release(claim) {
      await db
        .updateTable('runs')
        .set({ locked_by: null, locked_until: null, claims: sql<number>`claims - 1` })
        .where('id', '=', claim.runId)
        .where('locked_by', '=', claim.workerId)
        .where('claims', '=', claim.claims)
        .execute();
    },
  };
}

/** A tenant's run, or undefined when this tenant has none with this id (an upload not finished is none). */
export async function findRun(
  db: Kysely<Database>,
  tenantId: string,
  runId: string,
): Promise<RunRecord | undefined> {
  return db
    .selectFrom('runs')
    .select(RUN_COLUMNS)
    .where('id', '=', runId)
    .where('tenant_id', '=', tenantId)
    .where('status', '!=', 'uploading')
    .executeTakeFirst();
}

/** An attempted item with its log record's bytes (which hold its result), or null bytes when it failed. */
export type RunItemRecord = Selectable<RunItemsTable> & { bytes: Uint8Array | null };

/** Up to `limit` attempted items of a run after `afterIndex`, in item order, with their log records. */
export async function listRunItems(
  db: Kysely<Database>,
  run: Pick<RunRecord, 'id' | 'tenant_id'>,
  afterIndex: number,
  limit: number,
): Promise<RunItemRecord[]> {
  return db
    .selectFrom('run_items')
    .leftJoin('log_records', (join) =>
      join.onRef('log_records.cid', '=', 'run_items.log_cid').on('log_records.tenant_id', '=', run.tenant_id),
    )
    .selectAll('run_items')
    .select('log_records.bytes')
    .where('run_items.run_id', '=', run.id)
    .where('run_items.item_index', '>', afterIndex)
    .orderBy('run_items.item_index')
    .limit(limit)
    .execute();
}

/** Inserts a new queued run, inside the caller's (idempotent create's) transaction. */
export async function insertRun(
  trx: Transaction<Database>,
  run: { id: string; tenantId: string; items: readonly ScoreRequest[]; now: Date; deadlineAt: Date | null },
): Promise<RunRecord> {
  return trx
    .insertInto('runs')
    .values({
      id: run.id,
      tenant_id: run.tenantId,
      status: 'queued',
      item_count: run.items.length,
      items: JSON.stringify(run.items),
      created_at: run.now.toISOString(),
      deadline_at: run.deadlineAt?.toISOString() ?? null,
    })
    .returning(RUN_COLUMNS)
    .executeTakeFirstOrThrow();
}
