import { hash } from 'node:crypto';
import { join } from 'node:path';
import { DatabaseSync, type SQLInputValue, type SQLOutputValue } from 'node:sqlite';
import { SqliteAdapter, type SqliteDatabase, SqliteDialect, type SqliteStatement } from 'kysely';
import { createOwnerOnlyFile, secureDataDir } from './owner-only-files.js';

/** The SQLite file inside DATA_DIR. */
export const SQLITE_FILE_NAME = 'scenario-scoring.sqlite';

const BUSY_TIMEOUT_MS = 5000;

/**
 * The WAL size (in pages, about 40 MB) at which the writing connection checkpoints by itself. The
 * SqliteCheckpointer thread normally keeps the WAL far smaller; this only bounds it if that thread falls
 * behind or is not running.
 */
const FALLBACK_AUTOCHECKPOINT_PAGES = 10_000;

/**
 * Prepared statements kept per SQL text. Kysely prepares every query it runs; preparing a multi-row INSERT
 * of a run batch (thousands of parameters) costs about as much as running it, and the same texts recur.
 */
const STATEMENT_CACHE_SIZE = 100;

/**
 * Gives a `node:sqlite` database the better-sqlite3 shape Kysely's SqliteDialect expects, reusing the
 * prepared statements of the most recent SQL texts (least recently used ones are dropped).
 * `begin` becomes `begin immediate`: every transaction here writes, and taking the write lock up front lets
 * busy_timeout wait for another process instead of failing with SQLITE_BUSY when a deferred read lock
 * cannot be upgraded.
 */
export function toKyselySqlite(database: DatabaseSync): SqliteDatabase {
  const cache = new Map<string, SqliteStatement>();
  const args = (parameters: ReadonlyArray<unknown>) => parameters as SQLInputValue[];
  const prepareNew = (sql: string): SqliteStatement => {
    const text = sql.trim().toLowerCase() === 'begin' ? 'begin immediate' : sql;
    const statement = database.prepare(text);
    return {
      reader: statement.columns().length > 0,
      all: (parameters) => statement.all(...args(parameters)),
      run: (parameters) => statement.run(...args(parameters)),
      // An iteration stays open across awaits, so it gets a statement of its own, never a shared one.
      iterate: (parameters) => database.prepare(text).iterate(...args(parameters)),
    };
  };
  return {
    close: () => database.close(),
    prepare(sql: string): SqliteStatement {
      let statement = cache.get(sql);
      if (statement) {
        // Most recently used last, so the first key is the one to drop.
        cache.delete(sql);
      } else {
        statement = prepareNew(sql);
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
      }
      cache.set(sql, statement);
      return statement;
    },
  };
}

/** Kysely's SQLite adapter says DDL is not transactional; SQLite's is, so migrations run in one transaction. */
class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

class NodeSqliteDialect extends SqliteDialect {
  override createAdapter(): SqliteAdapter {
    return new TransactionalDdlSqliteAdapter();
  }
}

/**
 * Opens (creating if needed) `${dataDir}/scenario-scoring.sqlite` in WAL mode with synchronous=FULL,
 * so that a commit returns only once it is flushed to disk. Checkpoints are left to a SqliteCheckpointer
 * (see FALLBACK_AUTOCHECKPOINT_PAGES).
 */
export function openSqliteDialect(dataDir: string): SqliteDialect {
  // Owner-only: the directory 0700, every file in it 0600 (defect #10).
  secureDataDir(dataDir);
  createOwnerOnlyFile(join(dataDir, SQLITE_FILE_NAME));
  const database = new DatabaseSync(join(dataDir, SQLITE_FILE_NAME));
  try {
    // Before anything runs: the trigger that queues each log record for its leaf calls it (migration 0006).
    database.function('log_leaf_hash', { deterministic: true }, logLeafHash);
    database.exec('PRAGMA journal_mode = WAL');
    database.exec('PRAGMA synchronous = FULL');
    database.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    database.exec('PRAGMA foreign_keys = ON');
    database.exec(`PRAGMA wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT_PAGES}`);
    // The -wal and -shm files exist now; any left looser by an older version are tightened.
    secureDataDir(dataDir);
  } catch (error) {
    database.close();
    throw error;
  }
  return new NodeSqliteDialect({ database: toKyselySqlite(database) });
}

/**
 * `log_leaf_hash(bytes)`, the RFC 9162 leaf hash SHA-256(0x00 ‖ bytes) of a log record, for the SQLite
 * trigger that queues each record inserted for its leaf in the verifiable log (PostgreSQL's trigger uses
 * its built-in sha256). SQLite has no SHA-256 of its own; a connection without this function cannot insert
 * log records ("no such function"), so none is ever inserted unqueued.
 */
function logLeafHash(bytes: SQLOutputValue): Uint8Array {
  if (!(bytes instanceof Uint8Array)) throw new TypeError('log_leaf_hash takes the record bytes (a BLOB)');
  const input = Buffer.allocUnsafe(bytes.length + 1);
  input[0] = 0x00;
  input.set(bytes, 1);
  return hash('sha256', input, 'buffer');
}
