import { join } from 'node:path';
import { type Dialect, Kysely, sql } from 'kysely';
import type { Database } from './database.js';
import { migrateToLatest } from './migrate.js';
import { openPostgresDialect } from './postgres-database.js';
import { SqliteCheckpointer } from './sqlite-checkpointer.js';
import { openSqliteDialect, SQLITE_FILE_NAME } from './sqlite-database.js';
import {
  runSteps,
  stepParts,
  type TransactionResults,
  type TransactionStep,
  type TransactOptions,
} from './transaction-steps.js';

/**
 * The server's persistence: one Kysely query layer over SQLite (embedded default) or PostgreSQL. It only
 * stores: the features build their stores on `db` (see features.ts), storage imports none of them.
 */
export interface Storage {
  readonly kind: 'sqlite' | 'postgres';
  /** The one query layer, for every feature's own queries. */
  readonly db: Kysely<Database>;
  /**
   * Runs writes known up front (compiled with `db`) as one transaction, and resolves with each one's
   * result once it is committed; rejects with the first failure, nothing of it kept. A step may be fenced
   * on an earlier one (see TransactionStep). On SQLite the whole
   * transaction is one message to the connection's thread, so its commit does not wait for the event loop
   * between statements (a group commit under load waited for it twice); on PostgreSQL it is
   * `db.transaction()` running them in order, or the statement alone when there is one (a statement is
   * its own transaction). `durability: 'lease'` is for writes nothing is acknowledged on (see leaseWrite).
   */
  transact(steps: readonly TransactionStep[], options?: TransactOptions): Promise<TransactionResults>;
  /** Where the data lives, for the start-up log: the SQLite file, or the PostgreSQL URL without password. */
  readonly location: string;
  /** True when the database answers. */
  ping(): Promise<boolean>;
  /** Closes the database (after the SQLite checkpointer). Close the features' stores first. */
  close(): Promise<void>;
}

/**
 * PostgreSQL's `transact`: the steps in one transaction, or a lone statement on its own (one round trip
 * instead of three; a statement is atomic by itself). Its commits are always flushed: they share WAL
 * flushes with other connections' and hold up nothing else, so a lease gains nothing from skipping it.
 */
async function transactOnPostgres(
  db: Kysely<Database>,
  steps: readonly TransactionStep[],
): Promise<TransactionResults> {
  const [only] = steps;
  if (steps.length === 1 && only !== undefined && stepParts(only).onlyIfChanged === undefined)
    return [await db.executeQuery(stepParts(only).query)];
  return db.transaction().execute((trx) => runSteps(steps, (query) => trx.executeQuery(query)));
}

/** How to open the storage: SQLite in `dataDir` unless `databaseUrl` names a PostgreSQL database. */
export interface StorageOptions {
  dataDir: string;
  databaseUrl?: string | undefined;
}

/**
 * Opens the storage: PostgreSQL when `databaseUrl` is set, else the SQLite file in `dataDir` (both
 * created if missing), then runs the migrations. Close it with `close()`.
 */
export async function openStorage(options: StorageOptions): Promise<Storage> {
  const kind = options.databaseUrl ? 'postgres' : 'sqlite';
  const sqlite = options.databaseUrl ? undefined : openSqliteDialect(options.dataDir);
  const dialect: Dialect = sqlite ?? openPostgresDialect(options.databaseUrl as string);
  const db = new Kysely<Database>({ dialect });
  try {
    await migrateToLatest(db, kind);
  } catch (error) {
    await db.destroy();
    throw error;
  }

  // Off the event loop: SQLite's own checkpoints would run inside commits (see SqliteCheckpointer).
  const checkpointer =
    kind === 'sqlite' ? new SqliteCheckpointer(join(options.dataDir, SQLITE_FILE_NAME)) : undefined;
  let closing: Promise<void> | undefined;

  return {
    kind,
    db,
    transact: sqlite
      ? (steps, transactOptions) => sqlite.executeTransaction(steps, transactOptions)
      : (steps) => transactOnPostgres(db, steps),
    location: options.databaseUrl
      ? redactPassword(options.databaseUrl)
      : join(options.dataDir, SQLITE_FILE_NAME),
    async ping() {
      try {
        await sql`select 1`.execute(db);
        return true;
      } catch {
        return false;
      }
    },
    close() {
      closing ??= (async () => {
        try {
          await checkpointer?.close();
        } finally {
          await db.destroy();
        }
      })();
      return closing;
    },
  };
}

function redactPassword(databaseUrl: string): string {
  try {
    const url = new URL(databaseUrl);
    if (url.password) url.password = '***';
    return url.toString();
  } catch {
    return 'postgres (unparsable DATABASE_URL)';
  }
}
