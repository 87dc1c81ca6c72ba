import { cidOfBytes } from '@scenario-scoring/engine';
import { type Kysely, sql, type Transaction } from 'kysely';
import { eventInserts, newEvent, type OutboxSignal } from '../events/event-outbox.js';
import { logRowInserts, type SubjectKey } from '../score-log/score-log-store.js';
import type { Database } from '../storage/database.js';
import { unpackRecord } from '../storage/record-codec.js';
import type { Storage } from '../storage/storage.js';
import { scoringRecordOnly, subjectKeyIs } from '../storage/subject-key-index.js';
import { changedRows } from '../storage/transaction-steps.js';
import {
  advanceErasure,
  type ErasureCountColumn,
  type ErasureLease,
  type ErasureRow,
  erasedCids,
  eraseEvents,
  eraseLogRecords,
  eraseRunItems,
  failedRunsWithRest,
  holdErasure,
  runsOfErasedItems,
  updateHeldErasure,
} from './erasure-store.js';

/** Rows an erasure handles per transaction: each is short, so the one SQLite connection is never held long. */
export const ERASURE_BATCH = 500;
/** CIDs per `erasure-log/1` record: a longer erasure is logged in several records. */
export const ERASURE_LOG_CHUNK = 1000;
/** Runs whose submitted items one batch of the `inputs` phase reads (each up to a megabyte of JSON). */
const INPUT_RUNS_PER_BATCH = 20;
/** Queued or running runs the `wait` phase has the database look through per statement. */
const WAIT_RUNS_PER_QUERY = 16;
/** Lines of an NDJSON run waiting to be scored the `wait` phase has the database look through per statement. */
const WAIT_LINES_PER_QUERY = 20_000;

/** What processing an erasure needs. */
export interface ErasureContext {
  storage: Pick<Storage, 'db' | 'kind' | 'transact'>;
  subjectKey: SubjectKey;
  outbox: Pick<OutboxSignal, 'notify'>;
  now: () => Date;
  batchSize?: number;
  /** The worker's claim, renewed by every batch so a long erasure is not taken over while it progresses. */
  lease?: { workerId: string; ms: number };
  /**
   * Called once the erasure completed, with its counts: the worker compacts the tables it changed
   * (erasedTables) with those of the other erasures completed meanwhile, at most once per
   * ErasureConfig's `compactIntervalMs` (compact()).
   */
  completed?: (counts: ErasureCounts) => void;
  /** True once the worker is stopping: the erasure is left where it is, to resume. */
  stopping?: () => boolean;
  /**
   * How long after it began an erasure by subject waits before it looks for records (ErasureConfig's
   * `settleMs`): scorings stamped before it have then committed or been refused. 0 when absent.
   */
  settleMs?: number;
}

/** How far processing got: done, waiting for a run holding the subject, or stopped (to resume). */
export type ErasureOutcome = 'completed' | 'waiting' | 'stopped';

/**
 * The phases of an erasure, in order; `progress` holds the current one and its cursor, so a worker killed
 * mid-way resumes where the last committed batch left it. Every batch is one transaction, and each record is
 * emptied by one UPDATE: a record is whole or erased, never half-erased.
 *
 * - `wait` (subject): until `settleMs` after the erasure began (a scoring stamped before it may still be
 *   committing), and while a run of the tenant created before the erasure began, and holding the subject,
 *   is queued or running (an NDJSON run: with a line of the subject not scored yet, read from `run_inputs`
 *   without an index of the subject: a scan of the lines waiting), and while an NDJSON upload of the tenant
 *   begun before it is still coming (its lines so far, or still to come, may hold the subject), the erasure
 *   waits, so the run's items are erased when they land.
 * - `records`: the subject's scorings' records created up to the erasure's start (by `subject_key`; a run
 *   item's record goes with its item, next); for retention, the records created before the cutoff (by the
 *   leaves' time order).
 * - `items`: run items of the subject (runs created up to the start) and their records, whenever scored;
 *   for retention, the items and submitted inputs of runs created before the cutoff.
 * - `inputs` (subject): the submitted items of the tenant's finished runs that hold the subject.
 * - `unkeyed` (subject): rows without a subject key (from before migration 0010): scanned once, erased when
 *   they are the subject's, keyed otherwise (so the next erasure finds them by the index).
 * - `events`: `policy.escalated` payloads of erased records, their deliveries' stored answers.
 * - `idempotency`: stored scoring answers (24 hours) that name an erased record.
 * - `log`: the `erasure-log/1` records, a transaction each (`log:<erased_at>|<last CID logged>`); the last
 *   one also completes the erasure (forgetting the subject) and raises `subject.erased`.
 */
export async function processErasure(erasure: ErasureRow, context: ErasureContext): Promise<ErasureOutcome> {
  let row = erasure;
  for (;;) {
    if (context.stopping?.()) return 'stopped';
    const [phase = 'wait', cursor = ''] = splitProgress(row.progress);
    let next: string | 'waiting' | 'completed';
    try {
      next = await step(row, phase, cursor, context);
    } catch (error) {
      // Another worker took the erasure over (this one's lease ran out) and moved it on: leave it to that one.
      if (error instanceof ErasureMovedOn) return 'waiting';
      throw error;
    }
    if (next === 'waiting') return 'waiting';
    if (next === 'completed') return 'completed';
    row = { ...row, progress: next };
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** The renewed end of the worker's claim, when it holds one. */
function leaseUntil(context: ErasureContext): ErasureLease | undefined {
  const { lease } = context;
  if (!lease) return undefined;
  return { workerId: lease.workerId, until: new Date(context.now().getTime() + lease.ms).toISOString() };
}

/** Thrown inside a batch's transaction (rolling it back) when another worker has moved the erasure on. */
class ErasureMovedOn extends Error {}

/** holdErasure from the progress this worker read; rolls the transaction back when it lost the erasure. */
async function hold(trx: Transaction<Database>, erasure: ErasureRow, context: ErasureContext): Promise<void> {
  if (!(await holdErasure(trx, erasure.id, erasure.progress, leaseUntil(context))))
    throw new ErasureMovedOn();
}

const PHASES = ['wait', 'records', 'items', 'inputs', 'unkeyed', 'events', 'idempotency', 'log'] as const;

function nextPhase(phase: string): string {
  const index = PHASES.indexOf(phase as (typeof PHASES)[number]);
  return PHASES[index + 1] ?? 'log';
}

function splitProgress(progress: string): [string, string] {
  const at = progress.indexOf(':');
  return at < 0 ? [progress || 'wait', ''] : [progress.slice(0, at), progress.slice(at + 1)];
}

/** Runs one bounded batch of the phase; returns the progress to go on from, or the end. */
async function step(
  erasure: ErasureRow,
  phase: string,
  cursor: string,
  context: ErasureContext,
): Promise<string | 'waiting' | 'completed'> {
  const { db } = context.storage;
  const limit = context.batchSize ?? ERASURE_BATCH;
  const tenantId = erasure.tenant_id;
  const bySubject = erasure.kind === 'subject';
  const subject = erasure.subject ?? '';
  const key = erasure.subject_key ?? '';
  const began = erasure.created_at;
  const before = erasure.before ?? '';
  const move = async (
    progress: string,
    work: (trx: Transaction<Database>) => Promise<Partial<Record<ErasureCountColumn, number>>>,
  ) => {
    await db.transaction().execute(async (trx) => {
      await hold(trx, erasure, context);
      await advanceErasure(trx, erasure.id, progress, await work(trx));
    });
    return progress;
  };

  switch (phase) {
    case 'wait': {
      if (bySubject && context.now().getTime() < Date.parse(began) + (context.settleMs ?? 0))
        return 'waiting';
      if (bySubject) {
        // The tenant's queued and running runs, a few at a time: the database looks for the subject's text in
        // their items and sends back only the items of those that hold it (before, every run's items were
        // read into the server at each look: 300 queued 1,000-item runs held an erasure 48 s each time).
        if (await openRunHolds(context, tenantId, began, subject)) return 'waiting';
        // An NDJSON upload still coming may hold the subject in lines not yet written (a batch in memory, or
        // not yet sent): waited for whatever its lines so far hold, until it is queued (then its lines are
        // in run_inputs, below), refused, or swept once its server is gone (run-upload-sweep.ts).
        const uploading = await db
          .selectFrom('runs')
          .select('id')
          .where('tenant_id', '=', tenantId)
          .where('created_at', '<=', began)
          .where('status', '=', 'uploading')
          .limit(1)
          .executeTakeFirst();
        if (uploading) return 'waiting';
        // An NDJSON run keeps its lines not yet scored in run_inputs: read a range of lines at a time.
        if (await pendingLineHolds(context, tenantId, began, subject)) return 'waiting';
      }
      return move(bySubject ? 'records' : 'records:', async () => ({}));
    }
    case 'records': {
      let cids: string[];
      let progress: string;
      if (bySubject) {
        const rows = await db
          .selectFrom('log_records')
          .select('cid')
          .where('tenant_id', '=', tenantId)
          .where(subjectKeyIs('subject_key', key))
          // Scorings: a run item's record goes with its item (the 'items' phase), found by its run item.
          .where(scoringRecordOnly)
          .where('created_at', '<=', began)
          .limit(limit)
          .execute();
        cids = rows.map((row) => row.cid);
        progress = cids.length < limit ? nextPhase(phase) : phase;
      } else {
        // Retention: by the leaves' (created_at, cid) order, from where the last batch (or the tenant's
        // previous retention erasure) stopped. Records not yet sequenced are seconds old, never expired.
        const [fromTime = '', fromCid = ''] = cursor.split('|');
        const rows = await db
          .selectFrom('log_leaves')
          .innerJoin('log_records', (join) =>
            join
              .onRef('log_records.tenant_id', '=', 'log_leaves.tenant_id')
              .onRef('log_records.cid', '=', 'log_leaves.cid'),
          )
          .select([
            'log_leaves.cid',
            'log_leaves.created_at',
            'log_records.request_id',
            'log_records.erasure_id',
          ])
          .where('log_leaves.tenant_id', '=', tenantId)
          .where('log_leaves.created_at', '<', before)
          .where((eb) =>
            eb.or([
              eb('log_leaves.created_at', '>', fromTime),
              eb.and([eb('log_leaves.created_at', '=', fromTime), eb('log_leaves.cid', '>', fromCid)]),
            ]),
          )
          .orderBy('log_leaves.created_at')
          .orderBy('log_leaves.cid')
          .limit(limit)
          .execute();
        // An erasure's own log records name no one, and stay.
        cids = rows
          .filter((row) => row.erasure_id === null && !row.request_id.startsWith('era_'))
          .map((row) => row.cid);
        const last = rows.at(-1);
        progress = rows.length < limit || !last ? nextPhase(phase) : `records:${last.created_at}|${last.cid}`;
      }
      return move(progress, async (trx) => ({
        log_records: await eraseLogRecords(trx, tenantId, cids, erasure.id, context.now()),
      }));
    }
    case 'items': {
      if (bySubject) {
        const rows = await db
          .selectFrom('run_items')
          .innerJoin('runs', 'runs.id', 'run_items.run_id')
          .select(['run_items.run_id', 'run_items.item_index', 'run_items.log_cid'])
          .where(subjectKeyIs('run_items.subject_key', key))
          .where('runs.tenant_id', '=', tenantId)
          .where('runs.created_at', '<=', began)
          .limit(limit)
          .execute();
        return move(rows.length < limit ? nextPhase(phase) : phase, async (trx) => {
          const cids = rows.flatMap((row) => (row.log_cid === null ? [] : [row.log_cid]));
          return {
            log_records: await eraseLogRecords(trx, tenantId, cids, erasure.id, context.now()),
            run_items: await eraseRunItems(trx, rows, erasure.id),
          };
        });
      }
      // Retention: the finished runs created before the cutoff, a few at a time, by id.
      const runs = await db
        .selectFrom('runs')
        .select(['id', 'items'])
        .where('tenant_id', '=', tenantId)
        .where('created_at', '<', before)
        .where('status', 'in', ['completed', 'failed'])
        .where('id', '>', cursor)
        .orderBy('id')
        .limit(10)
        .execute();
      const last = runs.at(-1);
      return move(runs.length < 10 || !last ? 'events' : `items:${last.id}`, async (trx) => {
        let items = 0;
        let inputs = 0;
        for (const run of runs) {
          const rows = await trx
            .selectFrom('run_items')
            .select(['run_id', 'item_index', 'log_cid'])
            .where('run_id', '=', run.id)
            .where('erasure_id', 'is', null)
            .execute();
          await eraseLogRecords(
            trx,
            tenantId,
            rows.flatMap((row) => (row.log_cid === null ? [] : [row.log_cid])),
            erasure.id,
            context.now(),
          );
          items += await eraseRunItems(trx, rows, erasure.id);
          if (run.items !== '[]') {
            await trx.updateTable('runs').set({ items: '[]' }).where('id', '=', run.id).execute();
            inputs += 1;
          }
        }
        return { run_items: items, run_inputs: inputs };
      });
    }
    case 'inputs': {
      // The submitted items of the finished runs created up to the start that hold the subject. Every item of
      // a completed run, and every attempted item of a failed one, has a run item: those of the subject were
      // erased by this erasure (the `items` phase), so their runs are found through `run_items_erasure_idx`
      // (migration 0027), a few at a time by run id. Then the failed inline runs with items never attempted
      // (`runs_failed_rest_idx`): those items have no run item. Nothing reads the tenant's other runs.
      // (Runs from before migration 0010, whose items have no subject key, are rewritten with their items in
      // the `unkeyed` phase.) The cursor: a run id, then `failed|` and a run id.
      const failed = cursor.startsWith('failed|');
      const from = failed ? cursor.slice('failed|'.length) : cursor;
      const ids = await (failed
        ? failedRunsWithRest(db, tenantId, from, INPUT_RUNS_PER_BATCH)
        : runsOfErasedItems(db, erasure.id, from, INPUT_RUNS_PER_BATCH)
      ).execute();
      const last = ids.at(-1)?.id;
      const runs = await finishedRunsHolding(
        context,
        tenantId,
        began,
        subject,
        ids.map((row) => row.id),
      );
      const progress =
        ids.length < INPUT_RUNS_PER_BATCH || last === undefined
          ? failed
            ? nextPhase(phase)
            : 'inputs:failed|'
          : `inputs:${failed ? 'failed|' : ''}${last}`;
      return move(progress, async (trx) => ({
        run_inputs: await eraseRunInputs(trx, runs, subject, erasure.id),
      }));
    }
    case 'unkeyed': {
      if (!bySubject) return move(nextPhase(phase), async () => ({}));
      return unkeyedStep(erasure, cursor, context, limit);
    }
    case 'events': {
      // The subject's escalation events whose record this erasure emptied (one of a record kept, created
      // after the erasure began, stays), by id from the cursor; for retention, those before the cutoff.
      let query = db
        .selectFrom('events')
        .select(['id', 'type', 'payload', 'created_at'])
        .where('tenant_id', '=', tenantId)
        .where('id', '>', cursor)
        .orderBy('id')
        .limit(limit);
      query = bySubject
        ? query.where('subject_key', '=', key)
        : query.where('subject_key', 'is not', null).where('created_at', '<', before);
      const events = await query.execute();
      const cids = events.map(
        (event) => (JSON.parse(event.payload) as { data?: { log_cid?: string } }).data?.log_cid ?? '',
      );
      const erased = await erasedAmong(db, tenantId, cids, null);
      const chosen = events.filter((_, i) => !bySubject || erased.has(cids[i] as string));
      const last = events.at(-1);
      return move(events.length < limit || !last ? nextPhase(phase) : `events:${last.id}`, async (trx) => ({
        events: chosen.length,
        delivery_attempts: await eraseEvents(trx, tenantId, chosen, erasure.id, context.now()),
      }));
    }
    case 'idempotency': {
      // Stored scoring answers (kept 24 hours) name their record and hold its result.
      const [fromKey = '', fromName = ''] = cursor.split('|');
      const rows = await db
        .selectFrom('idempotency_keys')
        .innerJoin('api_keys', 'api_keys.id', 'idempotency_keys.api_key_id')
        .select(['idempotency_keys.api_key_id', 'idempotency_keys.key', 'idempotency_keys.response_body'])
        .where('api_keys.tenant_id', '=', tenantId)
        .where('idempotency_keys.operation', '=', 'scoreSubject')
        .where((eb) =>
          eb.or([
            eb('idempotency_keys.api_key_id', '>', fromKey),
            eb.and([
              eb('idempotency_keys.api_key_id', '=', fromKey),
              eb('idempotency_keys.key', '>', fromName),
            ]),
          ]),
        )
        .orderBy('idempotency_keys.api_key_id')
        .orderBy('idempotency_keys.key')
        .limit(limit)
        .execute();
      const cidOf = (body: string) => {
        try {
          return (JSON.parse(body) as { log_cid?: string }).log_cid ?? '';
        } catch {
          return '';
        }
      };
      const cids = rows.map((row) => cidOf(row.response_body)).filter((cid) => cid !== '');
      const erased = await erasedAmong(db, tenantId, cids, erasure.id);
      const doomed = rows.filter((row) => erased.has(cidOf(row.response_body)));
      const last = rows.at(-1);
      return move(
        rows.length < limit || !last ? nextPhase(phase) : `idempotency:${last.api_key_id}|${last.key}`,
        async (trx) => {
          for (const row of doomed) {
            await trx
              .deleteFrom('idempotency_keys')
              .where('api_key_id', '=', row.api_key_id)
              .where('key', '=', row.key)
              .execute();
          }
          return { idempotency_answers: doomed.length };
        },
      );
    }
    default:
      return logErasure(erasure, cursor, context);
  }
}

/** Rows from before migration 0010 (no subject key): erased when the subject's, keyed otherwise. */
async function unkeyedStep(
  erasure: ErasureRow,
  cursor: string,
  context: ErasureContext,
  limit: number,
): Promise<string> {
  const { db } = context.storage;
  const tenantId = erasure.tenant_id;
  const subject = erasure.subject ?? '';
  const [table = 'log', from = ''] = cursor.split('|');
  const decoder = new TextDecoder();
  if (table === 'log') {
    const rows = await db
      .selectFrom('log_records')
      .select(['cid', 'bytes', 'request_id', 'created_at'])
      .where('tenant_id', '=', tenantId)
      .where('subject_key', 'is', null)
      .where('erasure_id', 'is', null)
      .where('cid', '>', from)
      .orderBy('cid')
      .limit(limit)
      .execute();
    const last = rows.at(-1);
    const progress = rows.length < limit || !last ? 'unkeyed:items|' : `unkeyed:log|${last.cid}`;
    await db.transaction().execute(async (trx) => {
      await hold(trx, erasure, context);
      const doomed: string[] = [];
      for (const row of rows) {
        let recorded: string | undefined;
        try {
          recorded = (JSON.parse(decoder.decode(unpackRecord(row.bytes))) as { subject?: unknown }).subject as
            | string
            | undefined;
        } catch {
          recorded = undefined;
        }
        if (typeof recorded !== 'string') continue;
        if (recorded === subject && row.created_at <= erasure.created_at) doomed.push(row.cid);
        else {
          await trx
            .updateTable('log_records')
            .set({ subject_key: context.subjectKey(tenantId, recorded) })
            .where('tenant_id', '=', tenantId)
            .where('cid', '=', row.cid)
            .execute();
        }
      }
      const erased = await eraseLogRecords(trx, tenantId, doomed, erasure.id, context.now());
      await advanceErasure(trx, erasure.id, progress, { log_records: erased });
    });
    return progress;
  }
  const [fromRun = '', fromIndex = '-1'] = from.split('#');
  const rows = await db
    .selectFrom('run_items')
    .innerJoin('runs', 'runs.id', 'run_items.run_id')
    .select(['run_items.run_id', 'run_items.item_index', 'run_items.subject', 'run_items.log_cid'])
    .where('runs.tenant_id', '=', tenantId)
    .where('run_items.subject_key', 'is', null)
    .where('run_items.erasure_id', 'is', null)
    .where((eb) =>
      eb.or([
        eb('run_items.run_id', '>', fromRun),
        eb.and([eb('run_items.run_id', '=', fromRun), eb('run_items.item_index', '>', Number(fromIndex))]),
      ]),
    )
    .orderBy('run_items.run_id')
    .orderBy('run_items.item_index')
    .limit(limit)
    .execute();
  const last = rows.at(-1);
  const progress =
    rows.length < limit || !last ? nextPhase('unkeyed') : `unkeyed:items|${last.run_id}#${last.item_index}`;
  const inputRuns = await finishedRunsHolding(context, tenantId, erasure.created_at, subject, [
    ...new Set(rows.filter((row) => row.subject === subject).map((row) => row.run_id)),
  ]);
  await db.transaction().execute(async (trx) => {
    await hold(trx, erasure, context);
    const doomed = rows.filter((row) => row.subject === subject);
    for (const row of rows) {
      if (row.subject === subject) continue;
      await trx
        .updateTable('run_items')
        .set({ subject_key: context.subjectKey(tenantId, row.subject) })
        .where('run_id', '=', row.run_id)
        .where('item_index', '=', row.item_index)
        .execute();
    }
    const cids = doomed.flatMap((row) => (row.log_cid === null ? [] : [row.log_cid]));
    const records = await eraseLogRecords(trx, tenantId, cids, erasure.id, context.now());
    const items = await eraseRunItems(trx, doomed, erasure.id);
    // Their runs' submitted items too: the `inputs` phase, before this one, found runs by their erased items.
    const inputs = await eraseRunInputs(trx, inputRuns, subject, erasure.id);
    await advanceErasure(trx, erasure.id, progress, {
      log_records: records,
      run_items: items,
      run_inputs: inputs,
    });
  });
  return progress;
}

/**
 * The `log` phase: the `erasure-log/1` records, one transaction each (through the log's insert, so they are
 * sequenced like any record), each moving the cursor past the CIDs it names; the last one also completes
 * the erasure (forgetting the subject) and raises `subject.erased`. An erasure of a million records is a
 * thousand short transactions, never one holding every CID (nor the one SQLite connection) at once. The
 * progress holds the time the records state (`log:<erased_at>|<last CID logged>`), so a worker that resumes
 * logs the rest under the same time. Every transaction is fenced on the progress this worker read and on its
 * claim (updateHeldErasure): one whose lease ran out while another went on writes nothing.
 *
 * A subject record created up to the erasure's start that committed late (after the `records` phase) sends
 * the erasure back there, checked before the first record and again by the completing statement itself (it
 * completes only while there is none). Found after records were logged, the erasure goes back all the same
 * and logs every CID again, under a later time, once the late records are erased: the earlier records stay
 * (the log is append-only), and each still states truly what had been erased by its time.
 */
async function logErasure(
  erasure: ErasureRow,
  cursor: string,
  context: ErasureContext,
): Promise<string | 'waiting' | 'completed'> {
  const { storage } = context;
  const { db } = storage;
  const bySubject = erasure.kind === 'subject';
  const key = erasure.subject_key ?? '';
  /** Records of the subject created up to the start and not erased: late commits. */
  const lateRecords = () =>
    db
      .selectFrom('log_records')
      .select(sql<number>`1`.as('late'))
      .where('tenant_id', '=', erasure.tenant_id)
      .where(subjectKeyIs('subject_key', key))
      .where(scoringRecordOnly)
      .where('created_at', '<=', erasure.created_at);
  const lease = leaseUntil(context);
  const backForLateRecords = async (): Promise<'records' | 'waiting'> => {
    const moved = await updateHeldErasure(db, erasure.id, erasure.progress, lease)
      .set({ progress: 'records' })
      .executeTakeFirst();
    return moved.numUpdatedRows > 0n ? 'records' : 'waiting';
  };
  if (cursor === '' && bySubject && (await lateRecords().limit(1).executeTakeFirst()))
    return backForLateRecords();
  const now = context.now();
  const at = cursor.indexOf('|');
  const erasedAt = at < 0 ? now.toISOString() : cursor.slice(0, at);
  const after = at < 0 ? '' : cursor.slice(at + 1);
  const page = await erasedCids(db, erasure.tenant_id, erasure.id, after, ERASURE_LOG_CHUNK);
  const logRows = [];
  if (page.cids.length > 0) {
    const bytes = erasureLogBytes(erasure.id, erasedAt, page.cids);
    logRows.push({
      tenant_id: erasure.tenant_id,
      cid: cidOfBytes(bytes),
      bytes,
      request_id: erasure.id,
      created_at: erasedAt,
    });
  }
  const progress = `log:${erasedAt}|${page.cids.at(-1) ?? after}`;
  // The first statement of each transaction is the fence (updateHeldErasure, as holdErasure), and the record
  // is written only when it changed the erasure.
  const fenced = (set: Record<string, unknown>, completing: boolean) =>
    updateHeldErasure(db, erasure.id, erasure.progress, lease)
      .set(set)
      .$if(completing && bySubject, (query) => query.where((eb) => eb.not(eb.exists(lateRecords()))))
      .compile();
  if (page.more) {
    const results = await storage.transact([
      fenced(
        {
          progress,
          ...(lease && { locked_until: lease.until }),
        },
        false,
      ),
      ...logRowInserts(db, logRows).map((statement) => ({ statement, onlyIfChanged: 0 })),
    ]);
    return changedRows(results, 0) ? progress : 'waiting';
  }
  const counts = await db
    .selectFrom('erasures')
    .selectAll()
    .where('id', '=', erasure.id)
    .executeTakeFirstOrThrow();
  const event = newEvent(
    erasure.tenant_id,
    'subject.erased',
    { erasure_id: erasure.id, kind: erasure.kind, counts: erasureCounts(counts), erased_at: erasedAt },
    now,
  );
  const results = await storage.transact([
    fenced(
      {
        status: 'completed',
        subject: null,
        subject_key: null,
        erased_at: erasedAt,
        completed_at: now.toISOString(),
        progress: 'log',
        locked_by: null,
        locked_until: null,
      },
      true,
    ),
    ...logRowInserts(db, logRows).map((statement) => ({ statement, onlyIfChanged: 0 })),
    ...eventInserts(db, [event]).map((statement) => ({ statement, onlyIfChanged: 0 })),
  ]);
  if (!changedRows(results, 0)) {
    // Either moved on by another worker, or a late record of the subject: go back for it.
    return bySubject && (await lateRecords().limit(1).executeTakeFirst()) ? backForLateRecords() : 'waiting';
  }
  context.outbox.notify();
  context.completed?.(erasureCounts(counts));
  return 'completed';
}

/** The `erasure-log/1` record: RFC 8785 canonical JSON (keys sorted; only ASCII strings in it). */
export function erasureLogBytes(erasureId: string, erasedAt: string, cids: readonly string[]): Uint8Array {
  return new TextEncoder().encode(
    JSON.stringify({ erased_at: erasedAt, erasure_id: erasureId, log_cids: cids, schema: 'erasure-log/1' }),
  );
}

/** An erasure's counts as the API shows them. */
export type ErasureCounts = Record<ErasureCountColumn, number>;

/** An erasure's counts as the API shows them. */
export function erasureCounts(row: ErasureRow): ErasureCounts {
  return {
    log_records: Number(row.log_records),
    run_items: Number(row.run_items),
    run_inputs: Number(row.run_inputs),
    events: Number(row.events),
    delivery_attempts: Number(row.delivery_attempts),
    idempotency_answers: Number(row.idempotency_answers),
  };
}

/** The database's test that `column` contains `needle` (plain text, no pattern). */
function containsText(kind: Storage['kind'], column: string, needle: string) {
  return kind === 'postgres'
    ? sql<boolean>`strpos(${sql.ref(column)}, ${needle}) > 0`
    : sql<boolean>`instr(${sql.ref(column)}, ${needle}) > 0`;
}

/**
 * Whether a queued or running run of the tenant created up to `began` holds the subject in its submitted
 * items. Read WAIT_RUNS_PER_QUERY runs at a time through `runs_tenant_unfinished_idx`, the database looking
 * for the subject's JSON text in each run's items and sending back only the items of those that have it
 * (checked whole here); the event loop is let through between statements.
 */
async function openRunHolds(
  context: ErasureContext,
  tenantId: string,
  began: string,
  subject: string,
): Promise<boolean> {
  const { db, kind } = context.storage;
  const found = containsText(kind, 'items', JSON.stringify(subject));
  let after = '';
  for (;;) {
    const rows = await db
      .selectFrom('runs')
      .select(['id', sql<string | null>`case when ${found} then items end`.as('holding')])
      .where('tenant_id', '=', tenantId)
      // Literal, as runs_tenant_unfinished_idx's condition is.
      .where(sql<boolean>`status in ('queued', 'running')`)
      .where('id', '>', after)
      .where('created_at', '<=', began)
      .orderBy('id')
      .limit(WAIT_RUNS_PER_QUERY)
      .execute();
    if (rows.some((row) => row.holding !== null && holdsSubject(row.holding, subject))) return true;
    const last = rows.at(-1);
    if (rows.length < WAIT_RUNS_PER_QUERY || !last) return false;
    after = last.id;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * Whether a queued or running NDJSON run of the tenant created up to `began` has a line of the subject not
 * scored yet (in `run_inputs`, which has no index of the subject): each run's waiting lines are read
 * WAIT_LINES_PER_QUERY at a time by their primary key, the event loop let through between statements.
 */
async function pendingLineHolds(
  context: ErasureContext,
  tenantId: string,
  began: string,
  subject: string,
): Promise<boolean> {
  const { db } = context.storage;
  const runs = await db
    .selectFrom('runs')
    .select(['id', 'next_index', 'item_count'])
    .where('tenant_id', '=', tenantId)
    .where(sql<boolean>`status in ('queued', 'running')`)
    .where('input', '=', 'ndjson')
    .where('created_at', '<=', began)
    .execute();
  for (const run of runs) {
    for (let from = Number(run.next_index); from < Number(run.item_count); from += WAIT_LINES_PER_QUERY) {
      const line = await db
        .selectFrom('run_inputs')
        .select('item_index')
        .where('run_id', '=', run.id)
        .where('item_index', '>=', from)
        .where('item_index', '<', from + WAIT_LINES_PER_QUERY)
        .where('subject', '=', subject)
        .limit(1)
        .executeTakeFirst();
      if (line) return true;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  return false;
}

/**
 * Of the runs `ids`, the tenant's finished ones created up to `began` whose submitted items hold the
 * subject's text (the database filters; each is checked whole when rewritten), with their items.
 */
async function finishedRunsHolding(
  context: ErasureContext,
  tenantId: string,
  began: string,
  subject: string,
  ids: readonly string[],
): Promise<{ id: string; items: string }[]> {
  if (ids.length === 0) return [];
  const { db, kind } = context.storage;
  return db
    .selectFrom('runs')
    .select(['id', 'items'])
    .where('id', 'in', ids)
    .where('tenant_id', '=', tenantId)
    .where('created_at', '<=', began)
    .where('status', 'in', ['completed', 'failed'])
    .where(containsText(kind, 'items', `"subject":${JSON.stringify(subject)}`))
    .orderBy('id')
    .execute();
}

/** Replaces the subject's submitted items in `runs` by `{"erasure_id"}`; returns how many it replaced. */
async function eraseRunInputs(
  trx: Transaction<Database>,
  runs: readonly { id: string; items: string }[],
  subject: string,
  erasureId: string,
): Promise<number> {
  let inputs = 0;
  for (const run of runs) {
    const items = JSON.parse(run.items) as { subject?: string }[];
    let changed = false;
    const kept = items.map((item) => {
      if (item?.subject !== subject) return item;
      changed = true;
      inputs += 1;
      return { erasure_id: erasureId };
    });
    if (changed) {
      await trx
        .updateTable('runs')
        .set({ items: JSON.stringify(kept) })
        .where('id', '=', run.id)
        .execute();
    }
  }
  return inputs;
}

/**
 * The tables whose rows an erasure with these counts changed, that compact() vacuums on PostgreSQL: always
 * `erasures` (its row held the subject until it completed); the records' (`log_records`); the run items'
 * and, with them, `run_inputs` (an NDJSON run's lines, deleted as they were scored, held the subject) and
 * the items' records; the runs' submitted items (`runs`); the events' payloads, the receivers' answers
 * (`delivery_attempts`) and the stored idempotent answers.
 */
export function erasedTables(counts: ErasureCounts): CompactedTable[] {
  const tables = new Set<CompactedTable>(['erasures']);
  if (counts.log_records > 0) tables.add('log_records');
  if (counts.run_items > 0)
    for (const table of ['run_items', 'run_inputs', 'log_records'] as const) tables.add(table);
  if (counts.run_inputs > 0) tables.add('runs');
  if (counts.events > 0) tables.add('events');
  if (counts.delivery_attempts > 0) tables.add('delivery_attempts');
  if (counts.idempotency_answers > 0) tables.add('idempotency_keys');
  return [...tables];
}

/** The tables an erasure may leave dead row versions of the subject in (erasedTables). */
export const COMPACTED_TABLES = [
  'log_records',
  'run_items',
  'run_inputs',
  'runs',
  'events',
  'delivery_attempts',
  'idempotency_keys',
  'erasures',
] as const;
export type CompactedTable = (typeof COMPACTED_TABLES)[number];

/** True when a run's submitted items (JSON) hold the subject. */
function holdsSubject(items: string, subject: string): boolean {
  if (!items.includes(JSON.stringify(subject))) return false;
  return (JSON.parse(items) as { subject?: string }[]).some((item) => item?.subject === subject);
}

/**
 * The erased bytes leave the disk: SQLite overwrites freed content (`secure_delete`, set on its connection)
 * and its WAL is checkpointed into the main file and truncated; on PostgreSQL `tables` (erasedTables of the
 * erasures completed since the last time) are vacuumed, in one statement outside a transaction: their dead
 * row versions are freed for reuse, not overwritten (docs/personal-data.md says what stays on disk, and what
 * WAL archives and backups keep).
 *
 * On SQLite the zeroed pages reach the main file only when the checkpoint completes: one that reports
 * itself busy (a reader on an older snapshot, the checkpointer thread's own PASSIVE round) has copied only
 * part of the WAL, so the main file may still hold the old pages. It is tried again, with a short backoff,
 * until it reports every frame copied and the WAL truncated, for at most `attempts` rounds (each waits up to
 * the connection's busy timeout for readers); resolves with whether it completed (the worker tries again on
 * its next round when it did not).
 */
export async function compact(
  storage: Pick<Storage, 'db' | 'kind'>,
  tables: readonly CompactedTable[] = COMPACTED_TABLES,
  attempts = 4,
): Promise<boolean> {
  if (storage.kind !== 'sqlite') {
    // Only names from COMPACTED_TABLES, in its order.
    const named = COMPACTED_TABLES.filter((table) => tables.includes(table));
    if (named.length > 0) await sql.raw(`vacuum ${named.join(', ')}`).execute(storage.db);
    return true;
  }
  for (let attempt = 1; ; attempt += 1) {
    const { rows } = await sql<{ busy: number; log: number; checkpointed: number }>`
      pragma wal_checkpoint(TRUNCATE)`.execute(storage.db);
    const result = rows[0];
    if (result && Number(result.busy) === 0 && Number(result.log) <= 0) return true;
    if (attempt >= attempts) return false;
    await new Promise((resolve) => setTimeout(resolve, Math.min(25 * attempt, 250)));
  }
}

/**
 * Which of `cids` are erased records of the tenant: by any erasure (`erasureId` null) or by the one named.
 * Empty CIDs (a payload or answer that names none) match nothing.
 */
async function erasedAmong(
  db: Kysely<Database>,
  tenantId: string,
  cids: readonly string[],
  erasureId: string | null,
): Promise<Set<string>> {
  if (cids.length === 0) return new Set();
  const rows = await db
    .selectFrom('log_records')
    .select('cid')
    .where('tenant_id', '=', tenantId)
    .where('erasure_id', erasureId === null ? 'is not' : '=', erasureId)
    .where('cid', 'in', cids)
    .execute();
  return new Set(rows.map((row) => row.cid));
}
