import type { RunCounts, ScoreRequest } from '@scenario-scoring/api-types';
import { type CompiledQuery, sql } from 'kysely';
import { leaseWrite, type Storage } from '../storage/storage.js';
import { tenantTurns } from '../storage/tenant-turns.js';
import { fairShare } from '../workers/fair-share.js';

/**
 * How a claim shares the worker's slots among tenants: round robin over the tenants with free runs, in
 * tenant id order, starting after `after` (the tenant the worker last gave a slot to) and wrapping around;
 * a tenant's k-th oldest free run ranks at k plus the runs the worker already holds for that tenant
 * (`held`), lowest first, then in that round-robin order. So a tenant with many queued runs does not keep
 * another's waiting behind them, even with one slot: their runs take turns.
 */
export interface RunShare {
  held?: ReadonlyMap<string, number>;
  after?: string;
}

/** A run a worker claimed: what it needs to score the rest of it. */
export interface ClaimedRun {
  id: string;
  tenantId: string;
  /** Where its items are: `inline` in `items`, or `ndjson` (read a batch at a time, RunStore.inputs). */
  input: 'inline' | 'ndjson';
  /** The submitted items of an `inline` run; empty for an `ndjson` one. */
  items: ScoreRequest[];
  itemCount: number;
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

/** Claims retried when rivals locked some of the chosen runs first (PostgreSQL, several instances). */
const CLAIM_ATTEMPTS = 3;

/** The columns a claim returns (on PostgreSQL a row of nulls with `chosen` when it leased nothing). */
interface ClaimedRow {
  id: string;
  tenant_id: string;
  input: 'inline' | 'ndjson';
  item_count: number;
  items: string;
  next_index: number;
  succeeded: number;
  failed: number;
  escalated: number;
  created_at: string;
  deadline_at: string | null;
  claims: number;
  /** PostgreSQL: the runs the statement chose, of which rivals may have locked some. */
  chosen?: string[] | null;
}

/**
 * Claims up to `limit` unfinished runs nobody holds, for `workerId` until `now + leaseMs`, shared among
 * tenants as RunShare says, in one statement (claimStatement); returned in the order chosen. On
 * PostgreSQL, when rivals locked some of the chosen runs first (FOR UPDATE SKIP LOCKED, so instances
 * never wait on each other), it looks again for others, up to CLAIM_ATTEMPTS times.
 */
export async function claimRuns(
  storage: Pick<Storage, 'db' | 'kind' | 'transact'>,
  options: { workerId: string; now: Date; leaseMs: number; limit: number; share: RunShare },
): Promise<ClaimedRun[]> {
  const held = new Map(options.share.held ?? []);
  const skip: string[] = [];
  const claimed: ClaimedRun[] = [];
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS && claimed.length < options.limit; attempt++) {
    const limit = options.limit - claimed.length;
    const share = { held, ...(options.share.after !== undefined && { after: options.share.after }) };
    // A lease: written without a disk flush of its own (see leaseWrite).
    const { rows } = await leaseWrite(storage, claimStatement(storage, { ...options, limit, share }, skip));
    const leased = rows.filter((row) => row.id !== null);
    for (const row of storage.kind === 'postgres' ? leased : inClaimOrder(leased, share)) {
      claimed.push(claimedRun(row));
      held.set(row.tenant_id, (held.get(row.tenant_id) ?? 0) + 1);
    }
    // PostgreSQL: those a rival had locked are passed over when it looks again.
    const lost = (rows[0]?.chosen ?? []).filter((id) => !leased.some((row) => row.id === id));
    if (lost.length === 0) break;
    skip.push(...lost);
  }
  return claimed;
}

/** Tenants each half of the round robin visits in one claim: enough for its slots and those held. */
function walkLength(limit: number, held: ReadonlyMap<string, number>): number {
  return Math.min(64, 4 + limit + held.size);
}

/**
 * The claim's one statement. Of the unfinished runs nobody holds (no live lease), it leases up to
 * `limit`, chosen as RunShare says: it walks the tenants with a free run after `after` in id order, then
 * from the first one up to `after` (walkLength each way), takes each one's oldest free runs (up to
 * `limit`), ranks a tenant's k-th at k plus what the worker holds for it, and takes the lowest ranks, then
 * by the walk.
 *
 * Each tenant is an index probe of runs_tenant_unfinished_idx (migration 0008), and so are its free runs:
 * the index holds the lease and the status, so no run's row (with its submitted items, up to a megabyte)
 * is read to find it free, and a claim costs the same however many runs or tenants wait (a probe reads
 * past held runs only, at most what the instances hold). The status is a
 * literal list so that the partial index applies; `held` is a small json object (the worker's runs by
 * tenant, at most RUN_CONCURRENCY). SQLite has no LATERAL, so a tenant's oldest are an `in` list. On
 * PostgreSQL a tenant's runs are asked for as a range of tenant ids, not an equality, ordered by (tenant,
 * id): with an equality the planner may walk the primary key and filter on the tenant, which it believes
 * cheap when its statistics predate the runs, and which grows with the runs (docs/benchmarks.md); the
 * range leaves it no plan but the index. The chosen runs are then locked with FOR UPDATE SKIP LOCKED, and
 * the statement also returns the ids it chose (`chosen`, on a row of nulls if it leased none), so that
 * claimRuns can look again past those a rival had locked (`skip`).
 */
export function claimStatement(
  storage: Pick<Storage, 'db' | 'kind'>,
  options: { workerId: string; now: Date; leaseMs: number; limit: number; share: RunShare },
  skip: readonly string[] = [],
): CompiledQuery<ClaimedRow> {
  const { now, limit, share } = options;
  const nowIso = now.toISOString();
  const held = share.held ?? new Map<string, number>();
  const heldJson = JSON.stringify(Object.fromEntries(held));
  const cursor = share.after ?? '';
  const walk = walkLength(limit, held);
  const postgres = storage.kind === 'postgres';
  // A run of `alias` is free: unfinished, and no live lease. A tenant is walked only when it has one: one
  // whose runs are all held (here or by other instances) is passed over, at the cost of reading past its
  // held runs in the index.
  const freeRun = (alias: 'u' | 'x') =>
    sql`${sql.raw(`${alias}.status in ('queued', 'running') and (${alias}.locked_until is null or ${alias}.locked_until <`)} ${nowIso})`;
  const unfinished = freeRun('u');
  const free = freeRun('x');
  const walked = tenantTurns({ table: 'runs', having: unfinished, cursor, walk, postgres });
  const ranked = postgres
    ? sql`ranked as (
        select c.id, w.turn,
          coalesce(h.value::integer, 0) + row_number() over (partition by w.tenant_id order by c.id) as rank
        from walked as w
        left join json_each_text(${heldJson}::json) as h on h.key = w.tenant_id
        cross join lateral (
          select x.id from runs as x
          where x.tenant_id >= w.tenant_id and x.tenant_id <= w.tenant_id and ${free}
            and not (x.id = any (${[...skip]}::text[]))
          order by x.tenant_id, x.id limit ${limit}
        ) as c
      )`
    : sql`ranked as (
        select c.id, w.turn, coalesce(h.value, 0) + row_number() over (partition by w.tenant_id order by c.id) as rank
        from walked as w
        left join json_each(${heldJson}) as h on h.key = w.tenant_id
        join runs as c on c.id in (
          select x.id from runs as x where x.tenant_id = w.tenant_id and ${free} order by x.id limit ${limit})
      )`;
  const set = sql`status = 'running', locked_by = ${options.workerId},
    locked_until = ${new Date(now.getTime() + options.leaseMs).toISOString()},
    started_at = coalesce(started_at, ${nowIso}), claims = claims + 1`;
  const returning = sql.raw(
    'id, tenant_id, input, item_count, items, next_index, succeeded, failed, escalated, created_at, deadline_at, claims',
  );
  // On PostgreSQL: the status is rechecked on the locked rows as `coalesce(k.status, '')`, not as
  // `k.status in (…)`, which would let the planner read all of runs_tenant_unfinished_idx (whose
  // condition that is) instead of looking the chosen few up by key, as it does when its statistics
  // predate the queue (a read that grows with the queue; as in claim_due_deliveries).
  // One row at least (nulls, left joined), so that the chosen ids come back even when rivals had locked
  // them all; in the order chosen, since tenant ids may sort otherwise in JavaScript than in the
  // database's collation.
  const statement = postgres
    ? sql<ClaimedRow>`
        with recursive ${walked}, ${ranked},
        chosen as (
          select q.id, row_number() over (order by q.rank, q.turn, q.id) as place from ranked as q
          order by q.rank, q.turn, q.id limit ${limit}
        ),
        locked as (
          select k.id from runs as k
          where k.id = any (array(select id from chosen))
            and coalesce(k.status, '') in ('queued', 'running')
            and (k.locked_until is null or k.locked_until < ${nowIso})
          for update skip locked
        ),
        updated as (
          update runs set ${set} where id = any (array(select id from locked)) returning ${returning}
        )
        select updated.*, (select array_agg(id) from chosen) as chosen
        from (select 1) as one left join updated on true left join chosen as c on c.id = updated.id
        order by c.place`
    : sql<ClaimedRow>`
        update runs set ${set} where id in (
          with recursive ${walked}, ${ranked}
          select q.id from ranked as q order by q.rank, q.turn, q.id limit ${limit}
        )
        returning ${returning}`;
  return statement.compile(storage.db);
}

/**
 * SQLite's claimed rows (RETURNING keeps no order) in the order claimStatement chose them: the tenants
 * after `after` in id order, then the others, each tenant's runs oldest first, shared by `fairShare` (a
 * tenant's k-th at k plus what the worker holds for it, lowest first, then in that turn). SQLite compares
 * text as bytes of UTF-8, as JavaScript does for the ids the CLI makes (ASCII).
 */
function inClaimOrder(rows: ClaimedRow[], share: RunShare): ClaimedRow[] {
  const after = share.after ?? '';
  const turn = (row: ClaimedRow) => [row.tenant_id <= after ? 1 : 0, row.tenant_id, row.id] as const;
  rows.sort((a, b) => {
    const [x, y] = [turn(a), turn(b)];
    return x[0] - y[0] || (x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0) || (x[2] < y[2] ? -1 : 1);
  });
  // Every row is leased already: ordered, none left out (no tenant cap, which would drop a tenant's runs
  // ranked past the claim's size by what the worker holds).
  const order = fairShare(
    rows.map((row) => row.tenant_id),
    { max: rows.length, tenantCap: Number.POSITIVE_INFINITY, held: share.held },
  );
  return order.map((n) => rows[n] as ClaimedRow);
}

function claimedRun(row: ClaimedRow): ClaimedRun {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    input: row.input,
    items: JSON.parse(row.items) as ScoreRequest[],
    itemCount: row.item_count,
    nextIndex: row.next_index,
    counts: { succeeded: row.succeeded, failed: row.failed, escalated: row.escalated },
    createdAt: row.created_at,
    deadlineAt: row.deadline_at,
    claims: row.claims,
  };
}
