import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync, type SQLInputValue } from 'node:sqlite';
import { SqliteAdapter, type SqliteDatabase, SqliteDialect, type SqliteStatement } from 'kysely';

/** The SQLite file inside DATA_DIR. */
export const SQLITE_FILE_NAME = 'scenario-scoring.sqlite';

const BUSY_TIMEOUT_MS = 5000;

/**
 * Gives a `node:sqlite` database the better-sqlite3 shape Kysely's SqliteDialect expects.
 * `begin` becomes `begin immediate`: every transaction here writes, and taking the write lock up front lets
 * busy_timeout wait for another process instead of failing with SQLITE_BUSY when a deferred read lock
 * cannot be upgraded.
 */
export function toKyselySqlite(database: DatabaseSync): SqliteDatabase {
  return {
    close: () => database.close(),
    prepare(sql: string): SqliteStatement {
      const statement = database.prepare(sql.trim().toLowerCase() === 'begin' ? 'begin immediate' : sql);
      const args = (parameters: ReadonlyArray<unknown>) => parameters as SQLInputValue[];
      return {
        reader: statement.columns().length > 0,
        all: (parameters) => statement.all(...args(parameters)),
        run: (parameters) => statement.run(...args(parameters)),
        iterate: (parameters) => statement.iterate(...args(parameters)),
      };
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
 * so that a commit returns only once it is flushed to disk.
 */
export function openSqliteDialect(dataDir: string): SqliteDialect {
  mkdirSync(dataDir, { recursive: true });
  const database = new DatabaseSync(join(dataDir, SQLITE_FILE_NAME));
  try {
    database.exec('PRAGMA journal_mode = WAL');
    database.exec('PRAGMA synchronous = FULL');
    database.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    database.exec('PRAGMA foreign_keys = ON');
  } catch (error) {
    database.close();
    throw error;
  }
  return new NodeSqliteDialect({ database: toKyselySqlite(database) });
}
