import { type Kysely, type Selectable, sql, type Transaction } from 'kysely';
import { textBytesSql, usageUpserts } from '../quota/tenant-usage.js';
import type { Database, ErasuresTable } from '../storage/database.js';
import { usesNumberedParameters } from '../storage/row-insert.js';
import {
  CID_PREFIX_LENGTH,
  cidAfter,
  cidPrefix,
  runItemCidAfter,
  runItemCidPrefix,
  scoringRecordOnly,
  subjectKeyIs,
} from '../storage/subject-key-index.js';

/** An erasure row as the worker and the API read it. */
export type ErasureRow = Selectable<ErasuresTable>;

/** What a run item's subject becomes once erased (the contract's `Subject` needs a non-empty string). */
export const ERASED_SUBJECT = 'erased';

/** The count columns of an erasure, per kind of data. */
export type ErasureCountColumn =
  | 'log_records'
  | 'run_items'
  | 'run_inputs'
  | 'events'
  | 'delivery_attempts'
  | 'idempotency_answers';

type Db = Kysely<Database> | Transaction<Database>;

/** A record of a subject as the access list shows it. */
export interface SubjectRecordRow {
  cid: string;
  request_id: string;
  created_at: string;
}

/**
 * The tenant's scorings of the subject whose key is `subjectKey` after the CID `after`, at most `limit`, in
 * the order of `log_records_subject_idx` (tenant, key prefix, the CIDs' first 20 characters; scorings only:
 * migration 0024), so a page is a walk of that index from `after` that reads about `limit` rows however many
 * records the subject has (and those of any subject whose key shares the 11-character prefix: 44 bits of a
 * keyed hash, a few pairs among 10 million subjects), and needs no sort. (Ordered by the whole CID too,
 * PostgreSQL, when its statistics promise a single row per key, sorts every record of the subject for each
 * page.) A run item's record is not in that index: `runItemRecordsPage` finds those.
 */
export function subjectRecordsPage(
  db: Db,
  tenantId: string,
  subjectKey: string,
  after: string,
  limit: number,
) {
  return scoringsOfSubject(db, tenantId, subjectKey).where(cidAfter(after)).orderBy(cidPrefix).limit(limit);
}

/** The tenant's scorings of the subject (what `log_records_subject_idx` holds of it). */
function scoringsOfSubject(db: Db, tenantId: string, subjectKey: string) {
  return db
    .selectFrom('log_records')
    .select(['cid', 'request_id', 'created_at'])
    .where('tenant_id', '=', tenantId)
    .where(subjectKeyIs('subject_key', subjectKey))
    .where(scoringRecordOnly);
}

/** The records of the tenant's run items of the subject (through `run_items_subject_idx`). */
function runItemRecordsOfSubject(db: Db, tenantId: string, subjectKey: string) {
  return db
    .selectFrom('run_items')
    .innerJoin('runs', 'runs.id', 'run_items.run_id')
    .innerJoin('log_records', (join) =>
      join
        .onRef('log_records.tenant_id', '=', 'runs.tenant_id')
        .onRef('log_records.cid', '=', 'run_items.log_cid'),
    )
    .select(['log_records.cid', 'log_records.request_id', 'log_records.created_at'])
    .where(subjectKeyIs('run_items.subject_key', subjectKey))
    .where('runs.tenant_id', '=', tenantId);
}

/**
 * The records of the tenant's run items of the subject after the CID `after`, at most `limit`, through
 * `run_items_subject_idx` (key prefix, the records' CIDs' first 20 characters: migration 0024), walked in
 * that order as `subjectRecordsPage` walks its index; each item's run gives the tenant, its record the
 * request id and time.
 */
export function runItemRecordsPage(
  db: Db,
  tenantId: string,
  subjectKey: string,
  after: string,
  limit: number,
) {
  return runItemRecordsOfSubject(db, tenantId, subjectKey)
    .where(runItemCidAfter(after))
    .orderBy(runItemCidPrefix)
    .limit(limit);
}

/** The subject's scorings whose CIDs start with `group` (a tie of `subjectRecordsPage`'s order), whole. */
export function subjectRecordsGroup(db: Db, tenantId: string, subjectKey: string, group: string) {
  return scoringsOfSubject(db, tenantId, subjectKey).where(cidPrefix, '=', group);
}

/** The subject's run items' records whose CIDs start with `group` (a tie of `runItemRecordsPage`'s order), whole. */
export function runItemRecordsGroup(db: Db, tenantId: string, subjectKey: string, group: string) {
  return runItemRecordsOfSubject(db, tenantId, subjectKey).where(runItemCidPrefix, '=', group);
}

/**
 * A page of the subject's records in CID order, and whether more follow: its scorings' records
 * (`subjectRecordsPage`) and its run items' (`runItemRecordsPage`), each read a page ahead and merged.
 * Where one of them has more than it gave, the page stops at the last CID it gave, so the next page's
 * `cid > after` skips none of its records.
 */
export async function readSubjectRecordsPage(
  db: Db,
  tenantId: string,
  subjectKey: string,
  after: string,
  limit: number,
): Promise<{ rows: SubjectRecordRow[]; more: boolean }> {
  const scorings = await pageInCidOrder(
    (from, n) => subjectRecordsPage(db, tenantId, subjectKey, from, n).execute(),
    (group) => subjectRecordsGroup(db, tenantId, subjectKey, group).execute(),
    after,
    limit,
  );
  const items = await pageInCidOrder(
    (from, n) => runItemRecordsPage(db, tenantId, subjectKey, from, n).execute(),
    (group) => runItemRecordsGroup(db, tenantId, subjectKey, group).execute(),
    after,
    limit,
  );
  // What each source has beyond its page is unknown here: nothing past the last CID of a source that has more.
  const ceilings = [scorings, items].flatMap((page) => (page.more ? [page.rows.at(-1)?.cid ?? after] : []));
  const ceiling = ceilings.reduce<string | undefined>(
    (lowest, cid) => (lowest === undefined || cid < lowest ? cid : lowest),
    undefined,
  );
  const merged = [...scorings.rows, ...items.rows]
    .filter((row) => ceiling === undefined || row.cid <= ceiling)
    .sort(byCid);
  return { rows: merged.slice(0, limit), more: scorings.more || items.more || merged.length > limit };
}

function byCid(a: { cid: string }, b: { cid: string }): number {
  return a.cid < b.cid ? -1 : a.cid > b.cid ? 1 : 0;
}

/**
 * A page of rows in CID order from a source walked in the order of the CIDs' first 20 characters (`read`),
 * and whether more follow. Rows whose CIDs share those characters (63 bits of SHA-256: in practice never)
 * come in no particular order: they are put in CID order here, and a page ends before such a group rather
 * than inside it (the group then comes whole on the next page); a group larger than a page is read whole
 * (`readGroup`) and cut by CID. So the next page's `cid > after` skips none of them.
 */
async function pageInCidOrder(
  read: (after: string, limit: number) => Promise<SubjectRecordRow[]>,
  readGroup: (prefix: string) => Promise<SubjectRecordRow[]>,
  after: string,
  limit: number,
): Promise<{ rows: SubjectRecordRow[]; more: boolean }> {
  const rows = await read(after, limit + 1);
  let page = rows.slice(0, limit);
  const next = rows[limit];
  if (next !== undefined) {
    const group = next.cid.slice(0, CID_PREFIX_LENGTH);
    const start = page.findIndex((row) => row.cid.slice(0, CID_PREFIX_LENGTH) === group);
    if (start > 0) page = page.slice(0, start);
    else if (start === 0) {
      // More than a page of rows share one CID prefix: read that group whole, and cut it by CID. (`cid >
      // after` is checked here, not in SQL: with it, SQLite without statistics walks the primary key instead.)
      page = (await readGroup(group)).filter((row) => row.cid > after);
    }
  }
  page.sort(byCid);
  return { rows: page.slice(0, limit), more: next !== undefined };
}

/** Inserts a new erasure, `pending`, in the caller's transaction. */
export async function insertErasure(
  db: Db,
  erasure: {
    id: string;
    tenantId: string;
    kind: 'subject' | 'retention';
    subject: string | null;
    subjectKey: string | null;
    before: string | null;
    now: Date;
    progress?: string;
  },
): Promise<ErasureRow> {
  return db
    .insertInto('erasures')
    .values({
      id: erasure.id,
      tenant_id: erasure.tenantId,
      kind: erasure.kind,
      status: 'pending',
      subject: erasure.subject,
      subject_key: erasure.subjectKey,
      before: erasure.before,
      created_at: erasure.now.toISOString(),
      ...(erasure.progress !== undefined && { progress: erasure.progress }),
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The tenant's erasure, or undefined (another tenant's is unknown). */
export async function findErasure(db: Db, tenantId: string, id: string): Promise<ErasureRow | undefined> {
  return db
    .selectFrom('erasures')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** A page of the CIDs of the records an erasure emptied, in CID order: `limit` after `after` ('' for the first), and whether more follow. */
export async function erasedCids(
  db: Db,
  tenantId: string,
  erasureId: string,
  after: string,
  limit: number,
): Promise<{ cids: string[]; more: boolean }> {
  const rows = await erasedCidsPage(db, tenantId, erasureId, after, limit + 1).execute();
  return { cids: rows.slice(0, limit).map((row) => row.cid), more: rows.length > limit };
}

/** erasedCids' query: `log_records_erasure_idx` (tenant, erasure, CID) walked in order from `after`. */
export function erasedCidsPage(db: Db, tenantId: string, erasureId: string, after: string, limit: number) {
  return db
    .selectFrom('log_records')
    .select('cid')
    .where('tenant_id', '=', tenantId)
    .where('erasure_id', '=', erasureId)
    .$if(after !== '', (query) => query.where('cid', '>', after))
    .orderBy('cid')
    .limit(limit);
}

/** How a claim chooses among the open erasures (see claimErasure). */
export interface ErasureClaimOptions {
  /**
   * Erasures not to claim (those the worker found waiting for a run this round, so that a claim of theirs
   * lapsing during a long round does not hand them back before the ones behind them).
   */
  passOver?: readonly string[];
  /** The tenant the worker last took an erasure of: the claim goes on with the next tenant after it. */
  after?: string;
  /**
   * Erasures by subject accepted after this time are still settling (ErasureConfig's `settleMs`): they
   * would only wait, so they are not claimed at all.
   */
  settledBy?: Date;
}

/** Candidates read per claim; those a rival takes first are passed over, and the claim looks again. */
const CLAIM_CANDIDATES = 5;
const CLAIM_ATTEMPTS = 3;

/**
 * Claims an open erasure nobody holds, for `leaseMs`, taking tenants in turn: the next tenant after
 * `after` (in id order, wrapping around) that has an erasure to claim, and that tenant's oldest. So one
 * tenant's thousands of queued erasures do not keep another's waiting behind them: with one worker, each
 * other tenant's erasure waits for at most one erasure of each tenant ahead of it in the turn. A tenant is
 * found by `erasures_tenant_open_idx` (migration 0027), which holds only open erasures; the lease keeps two
 * instances from working on one erasure at once; an erasure whose worker died is taken over when its lease
 * ends.
 */
export async function claimErasure(
  db: Kysely<Database>,
  workerId: string,
  now: Date,
  leaseMs: number,
  options: ErasureClaimOptions = {},
): Promise<ErasureRow | undefined> {
  const at = now.toISOString();
  const skip = [...(options.passOver ?? [])];
  const settled = options.settledBy?.toISOString();
  const claimable = () => {
    let query = db
      .selectFrom('erasures')
      // A literal, so that both databases match the partial index's condition.
      .where(sql<boolean>`status <> 'completed'`)
      .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', at)]));
    if (settled !== undefined)
      query = query.where((eb) => eb.or([eb('kind', '<>', 'subject'), eb('created_at', '<=', settled)]));
    if (skip.length > 0) query = query.where('id', 'not in', skip);
    return query;
  };
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    const nextTenant = async (after: string | undefined) =>
      (
        await claimable()
          .select('tenant_id')
          .$if(after !== undefined, (query) => query.where('tenant_id', '>', after ?? ''))
          .orderBy('tenant_id')
          .limit(1)
          .executeTakeFirst()
      )?.tenant_id;
    const tenant =
      (options.after === undefined ? undefined : await nextTenant(options.after)) ??
      (await nextTenant(undefined));
    if (tenant === undefined) return undefined;
    const candidates = await claimable()
      .select('id')
      .where('tenant_id', '=', tenant)
      .orderBy('created_at')
      .orderBy('id')
      .limit(CLAIM_CANDIDATES)
      .execute();
    for (const { id } of candidates) {
      const claimed = await db
        .updateTable('erasures')
        .set({ locked_by: workerId, locked_until: new Date(now.getTime() + leaseMs).toISOString() })
        .where('id', '=', id)
        .where('status', '<>', 'completed')
        .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', at)]))
        .returningAll()
        .executeTakeFirst();
      if (claimed) return claimed;
      // A rival instance took it first.
      skip.push(id);
    }
  }
  return undefined;
}

/**
 * How many erasures by subject of the tenant are open (pending), counted up to `limit` (through
 * `erasures_tenant_open_idx`: completed erasures are not read).
 */
export async function openErasures(db: Db, tenantId: string, limit: number): Promise<number> {
  const rows = await db
    .selectFrom('erasures')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where(sql<boolean>`status <> 'completed'`)
    .where('kind', '=', 'subject')
    .limit(limit)
    .execute();
  return rows.length;
}

/**
 * The runs (`id`) of the run items the erasure erased, after the run id `after`, at most `limit`, in id
 * order: a walk of `run_items_erasure_idx` (erasure_id, run_id; migration 0027), whatever the tenant's
 * history.
 */
export function runsOfErasedItems(db: Db, erasureId: string, after: string, limit: number) {
  return db
    .selectFrom('run_items')
    .select('run_id as id')
    .distinct()
    .where('erasure_id', '=', erasureId)
    .where('run_id', '>', after)
    .orderBy('run_id')
    .limit(limit);
}

/**
 * The tenant's failed inline runs with items never attempted (which have no run item), after the run id
 * `after`, at most `limit`, in id order: a walk of `runs_failed_rest_idx` (migration 0027), whose condition
 * is stated literally here so that both databases match it.
 */
export function failedRunsWithRest(db: Db, tenantId: string, after: string, limit: number) {
  return db
    .selectFrom('runs')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where(sql<boolean>`status = 'failed' and input = 'inline' and next_index < item_count`)
    .where('id', '>', after)
    .orderBy('id')
    .limit(limit);
}

/** Gives an erasure's claim up (it waits for runs, or the worker stops). */
export async function releaseErasure(db: Kysely<Database>, id: string, workerId: string): Promise<void> {
  await db
    .updateTable('erasures')
    .set({ locked_by: null, locked_until: null })
    .where('id', '=', id)
    .where('locked_by', '=', workerId)
    .execute();
}

/**
 * Empties records of the tenant (bytes, salt and all: the row, its leaf, index, tiles and checkpoints
 * stay), marking them erased by `erasureId`; returns how many it emptied (those already erased are left).
 * The emptied bytes are credited back to the tenant's storage usage in the same transaction (the row
 * overhead stays counted: the row stays).
 */
export async function eraseLogRecords(
  trx: Transaction<Database>,
  tenantId: string,
  cids: readonly string[],
  erasureId: string,
  now: Date,
): Promise<number> {
  if (cids.length === 0) return 0;
  const freed = await trx
    .selectFrom('log_records')
    .select(sql<number | string>`coalesce(sum(length(bytes)), 0)`.as('bytes'))
    .where('tenant_id', '=', tenantId)
    .where('cid', 'in', cids)
    .where('erasure_id', 'is', null)
    .executeTakeFirst();
  const result = await trx
    .updateTable('log_records')
    .set({ bytes: new Uint8Array(0), subject_key: null, erasure_id: erasureId })
    .where('tenant_id', '=', tenantId)
    .where('cid', 'in', cids)
    .where('erasure_id', 'is', null)
    .executeTakeFirst();
  for (const statement of usageUpserts(trx, tenantId, -Number(freed?.bytes ?? 0), now)) {
    await trx.executeQuery(statement);
  }
  return Number(result.numUpdatedRows);
}

/** Replaces the subject of run items (their results are in their records, emptied with them). */
export async function eraseRunItems(
  trx: Transaction<Database>,
  items: readonly { run_id: string; item_index: number }[],
  erasureId: string,
): Promise<number> {
  let erased = 0;
  for (const item of items) {
    const result = await trx
      .updateTable('run_items')
      .set({ subject: ERASED_SUBJECT, subject_key: null, erasure_id: erasureId })
      .where('run_id', '=', item.run_id)
      .where('item_index', '=', item.item_index)
      .where('erasure_id', 'is', null)
      .executeTakeFirst();
    erased += Number(result.numUpdatedRows);
  }
  return erased;
}

/**
 * Erases events (their payload becomes `{"id","type","timestamp","erasure_id"}`), cancels their pending
 * deliveries and drops the receivers' answers stored for their attempts; returns the attempts cleared. What
 * that frees (the payloads' bytes beyond the erased form's, the answers' bytes) is credited back to the
 * tenant's storage usage in the same transaction, as `rowBytes` counted it (UTF-8 bytes; the rows stay).
 */
export async function eraseEvents(
  trx: Transaction<Database>,
  tenantId: string,
  events: readonly { id: string; type: string; created_at: string }[],
  erasureId: string,
  now: Date,
): Promise<number> {
  if (events.length === 0) return 0;
  const ids = events.map((event) => event.id);
  const numbered = usesNumberedParameters(trx);
  const bytesOf = (column: string) =>
    sql<number | string>`coalesce(sum(${sql.raw(textBytesSql(column, numbered))}), 0)`;
  const payloadsBefore = await trx
    .selectFrom('events')
    .select(bytesOf('payload').as('bytes'))
    .where('id', 'in', ids)
    .executeTakeFirst();
  let payloadsAfter = 0;
  for (const event of events) {
    const payload = JSON.stringify({
      id: event.id,
      type: event.type,
      timestamp: event.created_at,
      erasure_id: erasureId,
    });
    payloadsAfter += Buffer.byteLength(payload);
    await trx
      .updateTable('events')
      .set({ payload, subject_key: null, dispatched_at: sql`coalesce(dispatched_at, ${now.toISOString()})` })
      .where('id', '=', event.id)
      .execute();
  }
  await trx
    .updateTable('deliveries')
    .set({ status: 'cancelled', next_attempt_at: null, updated_at: now.toISOString() })
    .where('event_id', 'in', ids)
    .where('status', '=', 'pending')
    .execute();
  // The receivers' answers stored for the events' deliveries' attempts. Read (and dropped) only after the
  // events were rewritten: on PostgreSQL an attempt recorded meanwhile held its event `FOR SHARE` until it
  // committed (see delivery-recorder.ts), so these statements, later ones, see its answer, and count it.
  const deliveriesOf = trx.selectFrom('deliveries').select('id').where('event_id', 'in', ids);
  const answers = await trx
    .selectFrom('delivery_attempts')
    .select(bytesOf('response_body').as('bytes'))
    .where('delivery_id', 'in', deliveriesOf)
    .where('response_body', 'is not', null)
    .executeTakeFirst();
  const attempts = await trx
    .updateTable('delivery_attempts')
    .set({ response_body: null })
    .where('delivery_id', 'in', deliveriesOf)
    .where('response_body', 'is not', null)
    .executeTakeFirst();
  const freed = Number(payloadsBefore?.bytes ?? 0) - payloadsAfter + Number(answers?.bytes ?? 0);
  for (const statement of usageUpserts(trx, tenantId, -freed, now)) await trx.executeQuery(statement);
  return Number(attempts.numUpdatedRows);
}

/** A worker's claim on an erasure, and the end it renews it to. */
export interface ErasureLease {
  workerId: string;
  until: string;
}

/**
 * An update of the erasure that applies only while it is where its worker read it (`from`), not
 * completed and, with `lease`, still claimed by that worker: every write of a batch's progress goes through
 * it, so a worker that lost its claim (another took the erasure over when its lease ran out) or whose
 * erasure was moved on changes nothing.
 */
export function updateHeldErasure(
  db: Kysely<Database> | Transaction<Database>,
  id: string,
  from: string,
  lease?: ErasureLease,
) {
  return db
    .updateTable('erasures')
    .where('id', '=', id)
    .where('progress', '=', from)
    .where('status', '<>', 'completed')
    .$if(lease !== undefined, (query) => query.where('locked_by', '=', lease?.workerId ?? ''));
}

/**
 * The first statement of each batch of an erasure: holds the erasure's row for the batch's transaction
 * (on PostgreSQL, a worker racing it waits here, before it erases anything) and renews the worker's claim,
 * through updateHeldErasure. Resolves false, changing nothing, when the worker lost the erasure: the caller
 * rolls its transaction back then, so a worker that lost its claim never erases, counts or moves the cursor
 * again, even where a batch leaves the progress as it was.
 */
export async function holdErasure(
  trx: Transaction<Database>,
  id: string,
  from: string,
  lease?: ErasureLease,
): Promise<boolean> {
  const result = await updateHeldErasure(trx, id, from, lease)
    .set(lease ? { locked_until: lease.until } : { progress: from })
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Adds to an erasure's counts and moves its progress on, in the caller's transaction (after holdErasure). */
export async function advanceErasure(
  trx: Transaction<Database>,
  id: string,
  progress: string,
  counts: Partial<Record<ErasureCountColumn, number>>,
): Promise<void> {
  await trx
    .updateTable('erasures')
    .set((eb) => {
      const set: Record<string, unknown> = { progress };
      for (const [column, count] of Object.entries(counts)) {
        if (count) set[column] = eb(eb.ref(column as ErasureCountColumn), '+', count);
      }
      return set;
    })
    .where('id', '=', id)
    .execute();
}
