import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import { parentPort as port, workerData } from 'node:worker_threads';
import { recordLeafHash } from './record-leaf-hash.ts';
import type { ReusedZlib } from './reused-zlib.ts';
import { reusedDeflateRaw, reusedInflateRaw } from './reused-zlib.ts';
import type {
  SqliteError,
  SqliteThreadData,
  StatementResult,
  ThreadRequest,
  TransactionStatement,
} from './sqlite-thread-messages.js';
import { COMMIT_DEADLINE_CODE } from './transaction-steps.ts';

/*
 * The thread that owns the SQLite connection (see SqliteThreadDialect). It opens the file, registers
 * `log_leaf_hash` (for the log's queuing trigger), applies the pragmas, then runs one statement per message
 * (or one whole transaction, see runTransaction) and answers with its rows or its changes. Prepared
 * statements are kept for the most recent SQL texts. A transaction begins with `begin immediate`, sent with
 * its first statement: every transaction here writes, and taking the write lock up front lets busy_timeout
 * wait for another process instead of failing with SQLITE_BUSY when a read lock cannot be upgraded.
 *
 * It imports only Node's modules, types, reused-zlib.ts and record-leaf-hash.ts (themselves only Node's),
 * by their `.ts` names, so
 * that Node runs this TypeScript source as it is under vitest (see server-files.ts); tsc rewrites them
 * (`rewriteRelativeImportExtensions`) and the build runs its output.
 */

if (port === null) throw new Error('sqlite-connection-thread.ts runs as a worker thread only');
const parentPort = port;
const data = workerData as SqliteThreadData;

/** An error as the message back carries it (see SqliteError). */
function describe(error: unknown): SqliteError {
  const fields = (error ?? {}) as Partial<Record<keyof SqliteError, unknown>>;
  return {
    message: String(fields.message),
    name: fields.name as string | undefined,
    code: fields.code as string | undefined,
    errcode: fields.errcode as number | undefined,
    errstr: fields.errstr as string | undefined,
  };
}

/** Each codec's inflate, one reused stream each (reused-zlib.ts), made when first needed. */
const inflates = new Map<number, ReusedZlib>();

/** The record a stored form holds (see `recordCodecs`): the bytes themselves when not packed. */
function unpacked(stored: Uint8Array): Uint8Array {
  const codec = stored.length > 0 ? (stored[0] as number) : -1;
  const options = data.recordCodecs[codec];
  if (options === undefined) return stored;
  let inflate = inflates.get(codec);
  if (inflate === undefined) {
    inflate = reusedInflateRaw(options, options);
    inflates.set(codec, inflate);
  }
  return inflate.run(stored.subarray(1));
}

/** The record packing's deflate (one reused stream), made when first needed. */
let deflate: ReusedZlib | undefined;

/**
 * The leaf hashes of the records `log_record_pack` packed during the message being run, by their stored
 * form (latin1, one character a byte): the queuing trigger asks for each right after its row's insert
 * (SQLite computes a multi-row INSERT's values first, then inserts each row and runs its trigger), so a
 * record is not unpacked again to be hashed. An entry is used once; what a conflict left unused is
 * dropped when the message is done (`forgetPacked`). A hit is exactly the hash `unpacked` would give: a
 * stored form packs one record.
 */
const packedLeafHashes = new Map<string, Buffer>();

function forgetPacked(): void {
  packedLeafHashes.clear();
}

/** A log record's stored form (`recordPacking`): a record packed, bytes already packed (or empty) as they are. */
function packed(bytes: Uint8Array): Uint8Array {
  if (bytes.length === 0 || data.recordCodecs[bytes[0] as number] !== undefined) return bytes;
  const { codec, deflate: options } = data.recordPacking;
  deflate ??= reusedDeflateRaw(options, data.recordCodecs[codec] ?? options);
  const stored = deflate.run(bytes, 1);
  stored[0] = codec;
  packedLeafHashes.set(stored.toString('latin1'), recordLeafHash(bytes));
  return stored;
}

/** Opens the file, or answers why it could not and ends the thread. */
function open(): DatabaseSync | undefined {
  let opened: DatabaseSync | undefined;
  try {
    opened = new DatabaseSync(data.file);
    // log_leaf_hash(bytes): the RFC 9162 leaf hash SHA-256(0x00 || bytes) of a log record, which the
    // trigger that queues each record inserted for its leaf in the verifiable log calls (migration 0006;
    // PostgreSQL's uses its built-in sha256). SQLite has no SHA-256 of its own; a connection without this
    // function cannot insert log records ("no such function"), so none is ever inserted unqueued.
    // A packed record (first byte a codec's: storage/record-codec.ts) is hashed as the record it packs,
    // never as its stored form.
    opened.function('log_leaf_hash', { deterministic: true }, (stored) => {
      if (!(stored instanceof Uint8Array))
        throw new TypeError('log_leaf_hash takes the record bytes (a BLOB)');
      if (packedLeafHashes.size > 0) {
        const key = Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength).toString('latin1');
        const known = packedLeafHashes.get(key);
        if (known !== undefined) {
          packedLeafHashes.delete(key);
          return known;
        }
      }
      return recordLeafHash(unpacked(stored));
    });
    // log_record_pack(bytes): a log record's stored form (storage/record-codec.ts), which the log's INSERT
    // puts each record through on SQLite (score-log-store.ts), so that packing costs this thread, not the
    // event loop. Bytes already packed (a run's records, packed on its scoring threads) stay as they are.
    opened.function('log_record_pack', { deterministic: true }, (bytes) => {
      if (!(bytes instanceof Uint8Array))
        throw new TypeError('log_record_pack takes the record bytes (a BLOB)');
      return packed(bytes);
    });
    for (const pragma of data.pragmas) opened.exec(pragma);
    if (data.busyTimeoutMs !== undefined) setBusyTimeout(opened, data.busyTimeoutMs);
    // Freed content is overwritten with zeros, so an erased record's bytes (and any deleted personal data)
    // leave the file, not only the b-tree (docs/personal-data.md).
    opened.exec('PRAGMA secure_delete = ON');
    parentPort.postMessage({ opened: true });
    return opened;
  } catch (error) {
    try {
      opened?.close();
    } catch {}
    parentPort.postMessage({ opened: false, error: describe(error) });
    parentPort.close();
    return undefined;
  }
}

/** SQLite's result code for a lock another connection holds (an extended code keeps it in its low byte). */
const SQLITE_BUSY = 5;

/** The wait for another connection's lock once one wait ran out (see SqliteThreadOptions.busyTimeoutMs). */
const CONTENDED_BUSY_TIMEOUT_MS = 100;

/**
 * A statement waited the whole busy timeout for another connection's lock in vain, and no write transaction
 * has begun here since: later statements wait `contendedBusyTimeoutMs` at most, not the whole timeout each.
 */
let contended = false;

function setBusyTimeout(db: DatabaseSync, ms: number): void {
  db.exec(`PRAGMA busy_timeout = ${Math.max(0, Math.floor(ms))}`);
}

/** After a statement's failure: SQLITE_BUSY after the whole wait means another connection keeps the lock. */
function noteFailure(db: DatabaseSync, error: unknown): void {
  const { busyTimeoutMs } = data;
  if (contended || busyTimeoutMs === undefined) return;
  const { errcode } = (error ?? {}) as { errcode?: unknown };
  if (typeof errcode !== 'number' || errcode % 256 !== SQLITE_BUSY) return;
  contended = true;
  setBusyTimeout(db, Math.min(busyTimeoutMs, data.contendedBusyTimeoutMs ?? CONTENDED_BUSY_TIMEOUT_MS));
}

/** After a write transaction began: the lock is this connection's, so the next wait may be the whole one. */
function noteWriteLockTaken(db: DatabaseSync): void {
  if (!contended || data.busyTimeoutMs === undefined) return;
  contended = false;
  setBusyTimeout(db, data.busyTimeoutMs);
}

/** `begin immediate`: the write lock taken, or the error that kept it (noted, see `contended`). */
function beginImmediate(db: DatabaseSync): { error: unknown } | undefined {
  try {
    prepare(db, 'begin immediate').statement.run();
  } catch (error) {
    noteFailure(db, error);
    return { error };
  }
  noteWriteLockTaken(db);
  return undefined;
}

const database = open();

interface CachedStatement {
  statement: StatementSync;
  /** Whether it returns rows (else its changes are the result). */
  reader: boolean;
}

/** The prepared statements of the most recent SQL texts, least recently used first. */
const cache = new Map<string, CachedStatement>();

function prepare(db: DatabaseSync, sql: string): CachedStatement {
  let entry = cache.get(sql);
  if (entry !== undefined) {
    cache.delete(sql);
  } else {
    const statement = db.prepare(sql);
    entry = { statement, reader: statement.columns().length > 0 };
    if (cache.size >= data.statementCacheSize) {
      const oldest = cache.keys().next();
      if (oldest.done !== true) cache.delete(oldest.value);
    }
  }
  cache.set(sql, entry);
  return entry;
}

function execute(db: DatabaseSync, sql: string, parameters: unknown[]): StatementResult {
  const { statement, reader } = prepare(db, sql);
  const values = parameters as SQLInputValue[];
  if (reader) return { rows: statement.all(...values) as Record<string, unknown>[] };
  const { changes, lastInsertRowid } = statement.run(...values);
  return { changes, lastInsertRowid };
}

/** Rolls back the open transaction, if any; a failure here leaves the error already reported. */
function rollbackIfOpen(db: DatabaseSync): void {
  try {
    if (db.isTransaction) prepare(db, 'rollback').statement.run();
  } catch {}
}

/**
 * A whole transaction in one message: begin, each statement, commit; on a failure, rollback, and the error
 * says which statement failed. Nothing of the transaction waits for the event loop in between. A statement
 * with onlyIfChanged runs only when that earlier statement changed a row (its result is null otherwise):
 * see TransactionStep.
 */
function runTransaction(
  db: DatabaseSync,
  id: number,
  statements: TransactionStatement[],
  lease: boolean,
  lockBy: number | undefined,
) {
  // A lease write's commit is not flushed to disk (see leaseWrite); FULL is set back whatever happens.
  if (lease) {
    try {
      prepare(db, 'pragma synchronous = normal').statement.run();
    } catch (error) {
      parentPort.postMessage({ id, error: describe(error) });
      return;
    }
  }
  try {
    runStatements(db, id, statements, lockBy);
  } finally {
    if (lease) {
      // runStatements rolled back on a failure; should that rollback itself have failed, once more, since
      // SQLite will not change the level inside a transaction. If FULL still cannot be set, the throw ends
      // this thread: every later statement fails rather than one running unflushed.
      rollbackIfOpen(db);
      prepare(db, 'pragma synchronous = full').statement.run();
    }
  }
}

function runStatements(
  db: DatabaseSync,
  id: number,
  statements: TransactionStatement[],
  lockBy: number | undefined,
): void {
  const notBegun = beginImmediate(db);
  if (notBegun !== undefined) {
    parentPort.postMessage({ id, error: describe(notBegun.error) });
    return;
  }
  // The write lock came too late (busy_timeout waits, messages queued ahead): nothing runs (TransactOptions).
  if (lockBy !== undefined && Date.now() > lockBy) {
    rollbackIfOpen(db);
    parentPort.postMessage({
      id,
      error: {
        message: `the write lock was taken ${Date.now() - lockBy} ms past the transaction's deadline`,
        code: COMMIT_DEADLINE_CODE,
      },
    });
    return;
  }
  const results: (StatementResult | null)[] = [];
  let index = 0;
  try {
    for (; index < statements.length; index++) {
      const { sql, parameters, onlyIfChanged } = statements[index] as TransactionStatement;
      const fence = onlyIfChanged === undefined ? undefined : results[onlyIfChanged];
      if (fence != null && !('changes' in fence)) throw new Error('a fence statement must not return rows');
      const runs = onlyIfChanged === undefined || (fence != null && Number(fence.changes) > 0);
      results.push(runs ? execute(db, sql, parameters) : null);
    }
    index = -1;
    prepare(db, 'commit').statement.run();
  } catch (error) {
    noteFailure(db, error);
    rollbackIfOpen(db);
    parentPort.postMessage({ id, error: describe(error), ...(index >= 0 && { statement: index }) });
    return;
  }
  parentPort.postMessage({ id, results });
}

if (database !== undefined) {
  const db = database;
  parentPort.on('message', (message: ThreadRequest) => {
    try {
      answer(message);
    } finally {
      forgetPacked();
    }
  });

  function answer(message: ThreadRequest): void {
    if ('close' in message) {
      try {
        db.close();
      } catch {}
      parentPort.close();
      return;
    }
    if ('transaction' in message) {
      runTransaction(db, message.id, message.transaction, message.lease, message.lockBy);
      return;
    }
    const { id, sql, parameters, begin } = message;
    try {
      if (begin) {
        const notBegun = beginImmediate(db);
        if (notBegun !== undefined) {
          parentPort.postMessage({ id, error: describe(notBegun.error), notBegun: true });
          return;
        }
      }
      parentPort.postMessage({ id, ...execute(db, sql, parameters) });
    } catch (error) {
      noteFailure(db, error);
      parentPort.postMessage({ id, error: describe(error) });
    }
  }
}
