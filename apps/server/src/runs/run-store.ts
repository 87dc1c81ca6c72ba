import type { Problem, RunCounts, ScoreRequest } from '@scenario-scoring/api-types';
import { type Kysely, type RawBuilder, type Selectable, sql, type Transaction } from 'kysely';
import { insertEvents, type OutboxEvent } from '../events/event-outbox.js';
import type { Database, RunItemsTable, RunsTable } from '../storage/database.js';
import { leaseWrite, type Storage } from '../storage/storage.js';
import { RunBatchCommitter } from './run-batch-committer.js';
import type { BatchCommit, RunClaim } from './run-claim.js';

export type { BatchCommit, RunClaim } from './run-claim.js';

/** A run as the API shows it: every column but the submitted items and the worker's claim. */
export type RunRecord = Omit<Selectable<RunsTable>, 'items' | 'locked_until' | 'locked_by' | 'claims'>;

/** The columns of a RunRecord. */
const RUN_COLUMNS = [
  'id',
  'tenant_id',
  'status',
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

/** A run a worker claimed: what it needs to score the rest of it. */
export interface ClaimedRun {
  id: string;
  tenantId: string;
  items: ScoreRequest[];
  /** The first item not committed yet. */
  nextIndex: number;
  counts: RunCounts;
  createdAt: string;
  deadlineAt: string | null;
  /**
   * The claims of the run that ended without a release, this one included (more than 1 after a crash or
   * a lost lease; a graceful stop releases its claim and does not count).
   */
  claims: number;
}

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

/**
 * How a claim shares the worker's slots among tenants. A tenant's k-th oldest free run ranks at k plus the
 * runs the worker holds for that tenant already (`held`); lowest rank first, then the tenant served least
 * recently (`lastServed`: a number that grows with each claim; a tenant absent from it comes first), then
 * the oldest run. So a tenant with many queued runs does not keep another's waiting behind them, even with
 * one slot: their runs take turns.
 */
export interface RunShare {
  held?: ReadonlyMap<string, number>;
  lastServed?: ReadonlyMap<string, number>;
}

/** The run queries the worker uses; tests wrap it to inject storage faults. */
export interface RunStore {
  /**
   * Claims unfinished runs nobody holds, up to `limit` (1 by default), for `leaseMs`, in one statement,
   * shared fairly among tenants (see RunShare). Returned in the order they were chosen; none when there is
   * none.
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
}

/** The RunStore over the server's storage. */
export function createRunStore(storage: Pick<Storage, 'db' | 'kind' | 'transact'>): RunStore {
  const { db, kind } = storage;
  const committer = new RunBatchCommitter(storage, { group: kind === 'sqlite' });
  return {
    async claim(workerId, now, leaseMs, limit = 1, share = {}) {
      const nowIso = now.toISOString();
      // A lease: written without a disk flush of its own (see leaseWrite).
      const { rows } = await leaseWrite(
        storage,
        db
          .updateTable('runs')
          .set({
            status: 'running',
            locked_by: workerId,
            locked_until: new Date(now.getTime() + leaseMs).toISOString(),
            started_at: sql<string>`coalesce(started_at, ${nowIso})`,
            claims: sql<number>`claims + 1`,
          })
          .where('id', 'in', fairlyClaimable(kind, nowIso, limit, share))
          .returning([
            'id',
            'tenant_id',
            'items',
            'next_index',
            'succeeded',
            'failed',
            'escalated',
            'created_at',
            'deadline_at',
            'claims',
          ])
          .compile(),
      );
      // In the order they were chosen (RETURNING keeps none of its own).
      return inClaimOrder(rows, share).map((row) => ({
        id: row.id,
        tenantId: row.tenant_id,
        items: JSON.parse(row.items) as ScoreRequest[],
        nextIndex: row.next_index,
        counts: { succeeded: row.succeeded, failed: row.failed, escalated: row.escalated },
        createdAt: row.created_at,
        deadlineAt: row.deadline_at,
        claims: row.claims,
      }));
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

/** A tenant's run, or undefined when this tenant has none with this id. */
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

/**
 * The ids of the runs a claim of up to `limit` takes: of the unfinished runs nobody holds at `nowIso`,
 * each tenant's oldest (at most `limit` each), in the order of RunShare. So one tenant's hundreds of
 * queued runs do not keep another tenant's run waiting until they are all done: it is taken as soon as a
 * slot is free.
 *
 * It walks the tenants with unfinished runs, an index probe each (runs_tenant_unfinished_idx, migration
 * 0008), and reads each one's oldest free runs from the same index, which holds the lease: no run's row
 * (with its submitted items) is read but those chosen. The status is a literal list so that SQLite uses
 * that partial index. SQLite has no LATERAL, so each tenant's oldest are an `in` list. On PostgreSQL the
 * chosen rows are locked with FOR UPDATE SKIP LOCKED, so instances claim different runs instead of queueing
 * behind one another's row locks; `held` counts this worker's runs only (another instance's are not known).
 */
function fairlyClaimable(
  kind: Storage['kind'],
  nowIso: string,
  limit: number,
  share: RunShare,
): RawBuilder<string> {
  const heldJson = JSON.stringify(Object.fromEntries(share.held ?? []));
  const servedJson = JSON.stringify(Object.fromEntries(share.lastServed ?? []));
  // Unfinished and not held by a live lease (a released or expired one is free).
  const free = (run: 'x' | 'k') =>
    sql`${sql.raw(`${run}.status in ('queued', 'running') and (${run}.locked_until is null or ${run}.locked_until <`)} ${nowIso})`;
  if (kind === 'postgres')
    return sql<string>`(
      with recursive unfinished_tenants(tenant_id) as (
        (select u.tenant_id from runs as u where u.status in ('queued', 'running') order by u.tenant_id limit 1)
        union all
        select (select u.tenant_id from runs as u
            where u.status in ('queued', 'running') and u.tenant_id > t.tenant_id order by u.tenant_id limit 1)
        from unfinished_tenants as t where t.tenant_id is not null
      ),
      ranked as (
        select c.id, coalesce(s.value::bigint, 0) as served,
          coalesce(h.value::integer, 0) + row_number() over (partition by t.tenant_id order by c.id) as rank
        from unfinished_tenants as t
        left join json_each_text(${heldJson}::json) as h on h.key = t.tenant_id
        left join json_each_text(${servedJson}::json) as s on s.key = t.tenant_id
        cross join lateral (
          select x.id from runs as x where x.tenant_id = t.tenant_id and ${free('x')} order by x.id limit ${limit}
        ) as c
        where t.tenant_id is not null
      )
      select k.id from runs as k
      where k.id = any (array(select q.id from ranked as q order by q.rank, q.served, q.id limit ${limit}))
        and ${free('k')}
      for update skip locked
    )`;
  return sql<string>`(
    with recursive unfinished_tenants(tenant_id) as (
      select (select min(u.tenant_id) from runs as u where u.status in ('queued', 'running'))
      union all
      select (select min(u.tenant_id) from runs as u
          where u.status in ('queued', 'running') and u.tenant_id > t.tenant_id)
      from unfinished_tenants as t where t.tenant_id is not null
    ),
    ranked as (
      select c.id, coalesce(s.value, 0) as served,
        coalesce(h.value, 0) + row_number() over (partition by t.tenant_id order by c.id) as rank
      from unfinished_tenants as t
      left join json_each(${heldJson}) as h on h.key = t.tenant_id
      left join json_each(${servedJson}) as s on s.key = t.tenant_id
      join runs as c on c.id in (
        select x.id from runs as x where x.tenant_id = t.tenant_id and ${free('x')} order by x.id limit ${limit})
      where t.tenant_id is not null
    )
    select q.id from ranked as q order by q.rank, q.served, q.id limit ${limit}
  )`;
}

/** Claimed rows in the order fairlyClaimable chose them (RunShare). */
function inClaimOrder<Row extends { id: string; tenant_id: string }>(rows: Row[], share: RunShare): Row[] {
  const byAge = rows.sort((a, b) => (a.id < b.id ? -1 : 1));
  const counts = new Map<string, number>();
  const ranked = byAge.map((row) => {
    const rank = (counts.get(row.tenant_id) ?? share.held?.get(row.tenant_id) ?? 0) + 1;
    counts.set(row.tenant_id, rank);
    return { row, rank, served: share.lastServed?.get(row.tenant_id) ?? 0 };
  });
  // Stable: equal ranks and turns stay oldest first.
  return ranked.sort((a, b) => a.rank - b.rank || a.served - b.served).map(({ row }) => row);
}
