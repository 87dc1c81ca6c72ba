import { CompiledQuery, type Insertable, type Kysely, type Transaction } from 'kysely';
import { AppError } from '../errors/app-error.js';
import {
  type OutboxEvent,
  type OutboxSignal,
  SUBSCRIBED_EVENTS_PER_STATEMENT,
  subscribedEventInsert,
  subscribedEventInserts,
} from '../events/event-outbox.js';
import {
  ROW_OVERHEAD_BYTES,
  storedBytesUsage,
  textBytesSql,
  USAGE_LOCK_ORDER,
  USAGE_ON_CONFLICT,
  writtenEventsUsage,
} from '../quota/tenant-usage.js';
import { chunks } from '../storage/chunks.js';
import type { Database, LogRecordsTable } from '../storage/database.js';
import { type GroupCommitStats, GroupCommitter } from '../storage/group-committer.js';
import {
  DamagedRecordError,
  isPacked,
  packRecord,
  recordLeafHash,
  unpackRecord,
  verifiedRecord,
} from '../storage/record-codec.js';
import { type RowInsert, rowInsertQuery, usesNumberedParameters } from '../storage/row-insert.js';
import type { Storage } from '../storage/storage.js';
import { COMMIT_DEADLINE_CODE } from '../storage/transaction-steps.js';
import { traced } from '../tracing/tracing.js';

/**
 * Rows per INSERT statement: 5 parameters a row stays far below SQLite's 32766 and PostgreSQL's 65535
 * bound parameters, whatever `maxBatch` is.
 */
const ROWS_PER_STATEMENT = 1000;

/** The log's INSERT: a (tenant, CID) already present is left alone. */
const LOG_ROW_INSERT: RowInsert<Insertable<LogRecordsTable>> = {
  table: 'log_records',
  columns: ['tenant_id', 'cid', 'bytes', 'request_id', 'created_at', 'subject_key'],
  onConflictDoNothing: ['tenant_id', 'cid'],
};

/**
 * The INSERT on SQLite: each record packed by the connection's thread as it is inserted
 * (`log_record_pack`, storage/sqlite-connection-thread.ts), so the event loop does not deflate; a row
 * already packed (a run's, packed on its scoring threads) is stored as it is.
 */
const SQLITE_LOG_ROW_INSERT: RowInsert<Insertable<LogRecordsTable>> = {
  ...LOG_ROW_INSERT,
  through: { bytes: 'log_record_pack' },
};

/** The INSERT on PostgreSQL, returning what queues the rows it inserted for their leaves. */
const LOG_ROW_INSERT_RETURNING: RowInsert<Insertable<LogRecordsTable>> = {
  ...LOG_ROW_INSERT,
  returning: ['tenant_id', 'created_at', 'cid'],
};

/** The same, returning also what counts the rows in their tenants' usage (`logRowInserts`' `usageAt`). */
const LOG_ROW_INSERT_RETURNING_BYTES: RowInsert<Insertable<LogRecordsTable>> = {
  ...LOG_ROW_INSERT,
  returning: ['tenant_id', 'created_at', 'cid', 'bytes'],
};

/**
 * SQLite: the usage of the rows the log INSERT right before it (in its transaction) stored: the rowids
 * `last_insert_rowid() - changes() + 1` through `last_insert_rowid()`, since a rowid table gives each new
 * row one more than the largest, rows a conflict left alone take none, and neither function counts the
 * queuing trigger's rows.
 */
const SQLITE_INSERTED_LOG_USAGE = storedBytesUsage(
  '"log_records"',
  'rowid between last_insert_rowid() - changes() + 1 and last_insert_rowid()',
  '?',
);

/**
 * A row of `log_records` to insert: `bytes` the record itself or its stored form already (packed on a
 * run's scoring thread), with the record's leaf hash when known, which PostgreSQL's insert queues (see
 * `logRowInserts`).
 */
export type LogRow = Insertable<LogRecordsTable> & { leaf_hash?: Uint8Array };

/**
 * The row as PostgreSQL stores it: the record packed (storage/record-codec.ts) and the leaf hash of the
 * record's own bytes, which its INSERT queues (PostgreSQL cannot unpack). A row that has both is returned
 * as it is. (SQLite packs and hashes on its connection's thread.)
 */
function postgresLogRow(row: LogRow): LogRow {
  if (!isPacked(row.bytes)) {
    return { ...row, bytes: packRecord(row.bytes), leaf_hash: recordLeafHash(row.bytes) };
  }
  return row.leaf_hash ? row : { ...row, leaf_hash: recordLeafHash(unpackRecord(row.bytes)) };
}

/** The tenant-keyed hash of a subject (`features.keyedHash.hash('subject', tenantId, subject)`). */
export type SubjectKey = (tenantId: string, subject: string) => string;

/** A score log record as the log store keeps it. */
export interface StoredLogRecord {
  tenantId: string;
  cid: string;
  bytes: Uint8Array;
  requestId: string;
  createdAt: Date;
  /** The record's subject: only its keyed hash is stored beside the record (`subject_key`), for erasure and access. */
  subject?: string;
  /** Events the scoring raised (`policy.escalated`), committed in the record's transaction. */
  events?: readonly OutboxEvent[];
}

/** The score log: appends grouped into one durable transaction per batch, reads by (tenant, CID). */
export interface ScoreLogStore {
  /** Resolves once the record (and its events) is durably committed (flushed to disk); concurrent appends share one transaction and one flush. Idempotent on (tenantId, cid). */
  append(record: StoredLogRecord): Promise<void>;
  /** The record's bytes (a Buffer, so `res.send` sends them unchanged), or undefined when this tenant has no record with this CID. */
  get(tenantId: string, cid: string): Promise<Buffer | undefined>;
  /** The erasure that emptied the tenant's record (its bytes are then empty), or undefined. */
  erasedBy(tenantId: string, cid: string): Promise<string | undefined>;
  /** Counters of the group commit (flushes = transactions). */
  readonly stats: GroupCommitStats;
  /** Flushes pending appends and refuses new ones. */
  close(): Promise<void>;
}

/**
 * Inserts records, and the events they raised, in one transaction. A (tenant, CID) already present is left
 * alone: the CID is the hash of the bytes, so the bytes are the same by definition. Returns how many
 * events it wrote (an event is written only for a tenant with a webhook that takes it), so the caller can
 * wake the delivery workers after the commit, and only then.
 */
export async function insertLogRecords(
  storage: Pick<Storage, 'db' | 'transact'>,
  records: readonly StoredLogRecord[],
  subjectKey?: SubjectKey,
  lockBy?: number,
): Promise<number> {
  const options = lockBy === undefined ? {} : { lockBy };
  const events: OutboxEvent[] = [];
  const postgres = usesNumberedParameters(storage.db);
  const rows = records.map((record) => {
    const key =
      subjectKey && record.subject !== undefined ? subjectKey(record.tenantId, record.subject) : null;
    if (record.events) {
      for (const event of record.events) events.push(key === null ? event : { ...event, subjectKey: key });
    }
    return {
      tenant_id: record.tenantId,
      cid: record.cid,
      bytes: record.bytes,
      request_id: record.requestId,
      created_at: record.createdAt.toISOString(),
      subject_key: key,
    };
  });
  // What the records add to their tenants' storage usage, as stored and only those stored (not a record
  // already there): counted by each INSERT's own statements (logRowInserts' `usageAt`).
  const now = new Date();
  // On PostgreSQL, a group commit is one statement, their usage's upsert included, and the events the
  // records raised (those a webhook takes) too, written by the first statement: one round trip, where a
  // transaction of three statements is five (a group commit holding an escalation took that transaction,
  // nearly every one under a lender's mix of contexts). More rows than one statement takes are statements
  // of one transaction. Beyond one statement's events, the transaction below.
  if (postgres && events.length <= SUBSCRIBED_EVENTS_PER_STATEMENT) {
    const statements =
      events.length === 0
        ? logRowInserts(storage.db, rows, now, undefined, lockBy)
        : traced('outbox.enqueue', () => logRowInserts(storage.db, rows, now, events, lockBy), {
            'outbox.events': events.length,
          });
    const [first] = await storage.transact(statements, options);
    if (events.length === 0) return 0;
    return Number((first?.rows[0] as { events?: unknown } | undefined)?.events ?? 0);
  }
  const inserts = logRowInserts(storage.db, rows, now, undefined, lockBy);
  // One transaction known up front (one message on SQLite). One multi-row insert of the events for the
  // whole group, so escalations do not cost the group commit a statement each; an event is written only
  // for a tenant with a webhook that takes it (subscribedEventInserts), and counted only if written.
  const eventInserts =
    events.length > 0
      ? traced('outbox.enqueue', () => subscribedEventInserts(storage.db, events), {
          'outbox.events': events.length,
        })
      : [];
  const results = await storage.transact(
    [
      ...inserts,
      ...eventInserts,
      ...writtenEventsUsage(
        storage.db,
        events.map((event) => event.id),
        now,
      ),
    ],
    options,
  );
  // The events written, not raised: a tenant with no webhook taking them has none written, and waking the
  // delivery workers for nothing costs each of them a claim (a write on SQLite's one connection).
  return eventInserts.reduce(
    (sum, _statement, n) => sum + Number(results[inserts.length + n]?.numAffectedRows ?? 0n),
    0,
  );
}

/**
 * Inserts log rows in the caller's transaction, in multi-row INSERTs, leaving a (tenant, CID) already
 * present alone (the CID is the hash of the bytes), each record stored packed: on PostgreSQL packed here
 * (`postgresLogRow`), on SQLite by the connection's thread as it inserts (`log_record_pack`). Each row
 * inserted is queued for its leaf in the tenant's verifiable log in the same statement: on SQLite by a
 * trigger (migration 0006) whose `log_leaf_hash` unpacks the record; on PostgreSQL by the statement itself
 * (a data-modifying WITH, as PostgreSQL cannot unpack: migration 0022), from the rows' leaf hashes. In key
 * order: CIDs are random, and sorted inserts touch fewer pages of the (tenant_id, cid) index. The sort is
 * stable, so of two equal rows the first wins. The tenant, request id and time, when a statement's rows
 * all share them (a run batch's), are each sent once (see `rowInsertQuery`).
 */
export async function insertLogRows(trx: Transaction<Database>, rows: readonly LogRow[]): Promise<void> {
  for (const query of logRowInserts(trx, rows)) await trx.executeQuery(query);
}

/**
 * The statements `insertLogRows` runs, compiled with `db`, to run in a transaction of the caller's. With
 * `usageAt`, each INSERT also adds the rows it stored to their tenants' usage (`storedBytesUsage`, stamped
 * `usageAt`): in the same statement on PostgreSQL, in the one right after it on SQLite. Without it the
 * caller counts them (a run batch, whose rows come packed) or they are not counted (an erasure's record).
 */
export function logRowInserts(
  db: Kysely<Database>,
  rows: readonly LogRow[],
  usageAt?: Date,
  events?: readonly OutboxEvent[],
  lockBy?: number,
): CompiledQuery[] {
  if (
    events !== undefined &&
    (!usageAt || !usesNumberedParameters(db) || events.length > SUBSCRIBED_EVENTS_PER_STATEMENT)
  )
    throw new Error(
      'log rows insert with events: PostgreSQL with usageAt only, at most one statement of events',
    );
  const postgres = usesNumberedParameters(db);
  const sorted = (postgres ? rows.map(postgresLogRow) : [...rows]).sort(
    (a, b) => compare(a.tenant_id, b.tenant_id) || compare(a.cid, b.cid),
  );
  const statements: CompiledQuery[] = [];
  for (const chunk of chunks(sorted, ROWS_PER_STATEMENT)) {
    if (postgres) {
      statements.push(
        queuedLogInsert(
          rowInsertQuery(
            db,
            usageAt ? LOG_ROW_INSERT_RETURNING_BYTES : LOG_ROW_INSERT_RETURNING,
            chunk,
            SHARED_LOG_COLUMNS,
          ),
          chunk,
          usageAt,
          statements.length === 0 ? events : undefined,
          lockBy,
        ),
      );
      continue;
    }
    statements.push(rowInsertQuery(db, SQLITE_LOG_ROW_INSERT, chunk, SHARED_LOG_COLUMNS));
    if (usageAt) statements.push(CompiledQuery.raw(SQLITE_INSERTED_LOG_USAGE, [usageAt.toISOString()]));
  }
  return statements;
}

/** The last part of a PostgreSQL log insert (`queuedLogInsert`) that does not count its usage. */
const LOG_INSERT_RESULT = ' select count(*) from "queued"';

/**
 * On PostgreSQL, `insert` (the rows' INSERT … RETURNING) with the queue rows of the rows it inserted (not
 * those a conflict left alone), each with its record's leaf hash, in one statement. Two equal rows of one
 * statement are one record: the first one's hash is queued, as the first one is inserted.
 */
function queuedLogInsert(
  insert: CompiledQuery,
  rows: readonly LogRow[],
  usageAt?: Date,
  events?: readonly OutboxEvent[],
  lockBy?: number,
): CompiledQuery {
  const tenants: string[] = [];
  const cids: string[] = [];
  const hashes: Uint8Array[] = [];
  const seen = new Set<string>();
  for (const row of rows) {
    const key = `${row.tenant_id} ${row.cid}`;
    if (seen.has(key)) continue;
    seen.add(key);
    if (!row.leaf_hash) throw new Error(`log row ${row.cid}: no leaf hash to queue it with`);
    tenants.push(row.tenant_id);
    cids.push(row.cid);
    hashes.push(row.leaf_hash);
  }
  const parameters = [...insert.parameters, tenants, cids, hashes];
  const n = insert.parameters.length;
  if (usageAt) parameters.push(usageAt.toISOString());
  // A data-modifying WITH runs whether or not the statement reads it: the queue rows are written either way.
  // With `lockBy`, each tenant's usage row, once locked, checks the clock: a statement that got it past the
  // deadline fails whole (division by zero, COMMIT_DEADLINE_SQLSTATE), so nothing it wrote commits. The
  // time left is measured on one clock, the database's (from the statement's start), never this host's
  // against the database's: the two may disagree by seconds.
  let inTime = '';
  if (usageAt && lockBy !== undefined) {
    parameters.push(Math.floor(lockBy - Date.now()));
    inTime = ` returning 1 / (case when clock_timestamp() <= statement_timestamp() + $${parameters.length}::bigint * interval '1 millisecond' then 1 else 0 end)`;
  }
  let result = usageAt
    ? ` ${storedBytesUsage('"inserted"', 'true', `$${n + 4}`, true)}${inTime}`
    : LOG_INSERT_RESULT;
  if (events !== undefined && events.length > 0 && usageAt) {
    // The events a webhook takes (subscribedEventInsert), written by the same statement, and one upsert of
    // the tenants' usage for the records and the events written together (two upserts of one row in one
    // statement are not allowed); the statement answers how many events it wrote.
    const written = subscribedEventInsert(events, parameters.length + 1, '"tenant_id", "payload"');
    parameters.push(...written.parameters);
    result =
      `, "events_written" as (${written.text}), "usage" as (` +
      `insert into "tenant_usage" ("tenant_id", "bytes", "updated_at") select "tenant_id", sum("stored"), $${n + 4} from (` +
      `select "tenant_id", length("bytes") + ${ROW_OVERHEAD_BYTES} as "stored" from "inserted" union all ` +
      `select "tenant_id", ${textBytesSql('"payload"', true)} + ${ROW_OVERHEAD_BYTES} from "events_written") as "rows" ` +
      `group by "tenant_id" ${USAGE_LOCK_ORDER} ${USAGE_ON_CONFLICT}${inTime}) select count(*) as "events" from "events_written"`;
  }
  return CompiledQuery.raw(
    `with "inserted" as (${insert.sql}), "queued" as (` +
      'insert into "log_leaf_queue" ("tenant_id", "created_at", "cid", "leaf_hash") ' +
      'select "inserted"."tenant_id", "inserted"."created_at", "inserted"."cid", "leaf"."hash" from "inserted" ' +
      `join unnest($${n + 1}::text[], $${n + 2}::text[], $${n + 3}::bytea[]) as "leaf"("tenant_id", "cid", "hash") ` +
      'on "leaf"."tenant_id" = "inserted"."tenant_id" and "leaf"."cid" = "inserted"."cid" returning 1)' +
      result,
    parameters,
  );
}

/** The log columns a run batch's rows share, each then bound once per statement. */
const SHARED_LOG_COLUMNS = ['tenant_id', 'request_id', 'created_at'] as const;

/** Strings by UTF-16 code units (bytewise for ASCII), for sort. */
export function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The bytes of a tenant's record, unpacked and checked against its CID (storage/record-codec.ts), as a Buffer on
 * both dialects (so `res.send` sends them as they are), or undefined when this tenant has no such record.
 */
export async function selectLogRecord(
  db: Kysely<Database>,
  tenantId: string,
  cid: string,
): Promise<Buffer | undefined> {
  const row = await db
    .selectFrom('log_records')
    .select('bytes')
    .where('tenant_id', '=', tenantId)
    .where('cid', '=', cid)
    .executeTakeFirst();
  return row ? servedRecord(row.bytes, cid) : undefined;
}

/**
 * The record stored as `stored` under `cid`, checked against its CID (`verifiedRecord`); a damaged one is
 * a 500 `internal_error` that says so, and is never served.
 */
export function servedRecord(stored: Uint8Array, cid: string): Buffer {
  try {
    return verifiedRecord(stored, cid);
  } catch (error) {
    if (!(error instanceof DamagedRecordError)) throw error;
    throw new AppError('internal_error', {
      detail: `The stored bytes of log record ${cid} do not hash to its CID: the database was changed or damaged, so the record is not served.`,
      cause: error,
    });
  }
}

/**
 * The longest a scoring's record may wait between its append (right after its stamp, `createdAt`: the
 * scoring is computed in between, synchronously) and the start of its commit, on the monotonic clock: an
 * older one is refused (503 `storage_unavailable`, nothing stored), so an erasure that waits longer than
 * this (ERASURE_SETTLE) finds every record stamped before it began.
 */
export const SCORE_LOG_MAX_COMMIT_AGE_MS = 15_000;

/** What a log store is built with: the group commit's cap, and the signal to notify after events commit. */
export interface LogStoreOptions {
  maxBatch?: number | undefined;
  /** SCORE_LOG_MAX_COMMIT_AGE_MS when absent. */
  maxCommitAgeMs?: number;
  /** A monotonic clock in ms (tests): appends and commits are timed by it; `performance.now` when absent. */
  now?: () => number;
  outbox?: OutboxSignal;
  /** Keys each record's subject (`subject_key`), so an erasure and an access request find it by an index. */
  subjectKey?: SubjectKey;
}

/**
 * The SQLSTATE a PostgreSQL log insert fails with when it locked a tenant's usage row past its `lockBy`
 * (`queuedLogInsert`: a division by zero is the error plain SQL can raise; no other division is in it).
 */
const COMMIT_DEADLINE_SQLSTATE = '22012';

/** Whether a log insert failed because it took its lock past its `lockBy` (SQLite's thread, or PostgreSQL). */
function isCommitDeadline(error: unknown): boolean {
  const { code } = (error ?? {}) as { code?: unknown };
  return code === COMMIT_DEADLINE_CODE || code === COMMIT_DEADLINE_SQLSTATE;
}

/** A ScoreLogStore whose appends go through a GroupCommitter over `insertLogRecords`. */
export function createScoreLogStore(
  storage: Pick<Storage, 'db' | 'transact'>,
  options: LogStoreOptions = {},
): ScoreLogStore {
  const { db } = storage;
  // Isolated: a record that cannot be stored fails its own request only, never the others of its batch.
  const maxAgeMs = options.maxCommitAgeMs ?? SCORE_LOG_MAX_COMMIT_AGE_MS;
  const now = options.now ?? (() => performance.now());
  const tooLate = () =>
    new AppError('storage_unavailable', {
      detail: `The scoring could not be logged within ${maxAgeMs / 1000} s of its start, so it was not stored; retry it.`,
      headers: { 'Retry-After': '1' },
    });
  const committer = new GroupCommitter<{ record: StoredLogRecord; appendedAt: number }>(
    async (batch) => {
      // A record stamped too long ago fails alone (the committer isolates it): see SCORE_LOG_MAX_COMMIT_AGE_MS.
      const oldest = now() - maxAgeMs;
      if (batch.some((pending) => pending.appendedAt < oldest)) throw tooLate();
      // And the commit must take the write lock by then too (waits for another writer, messages queued
      // ahead on SQLite's thread): checked where the lock is taken, on both databases.
      const lockBy = Math.floor(
        Date.now() + (Math.min(...batch.map((pending) => pending.appendedAt)) + maxAgeMs - now()),
      );
      let events: number;
      try {
        events = await insertLogRecords(
          storage,
          batch.map((pending) => pending.record),
          options.subjectKey,
          lockBy,
        );
      } catch (error) {
        throw isCommitDeadline(error) ? tooLate() : error;
      }
      if (events > 0) options.outbox?.notify();
    },
    options.maxBatch,
    { isolate: true, span: 'score_log.commit' },
  );
  return {
    append: (record) => committer.add({ record, appendedAt: now() }),
    get: (tenantId, cid) => selectLogRecord(db, tenantId, cid),
    erasedBy: async (tenantId, cid) =>
      (
        await db
          .selectFrom('log_records')
          .select('erasure_id')
          .where('tenant_id', '=', tenantId)
          .where('cid', '=', cid)
          .executeTakeFirst()
      )?.erasure_id ?? undefined,
    get stats() {
      return committer.stats;
    },
    close: () => committer.close(),
  };
}
