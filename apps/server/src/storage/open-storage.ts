import { join } from 'node:path';
import { type Dialect, Kysely, sql } from 'kysely';
import type { Database } from './database.js';
import { migrateToLatest } from './migrate.js';
import { openPostgresDialect } from './postgres-database.js';
import { SqliteCheckpointer } from './sqlite-checkpointer.js';
import { openSqliteDialect, SQLITE_FILE_NAME } from './sqlite-database.js';

/**
 * The server's persistence: one Kysely query layer over SQLite (embedded default) or PostgreSQL. It only
 * stores: the features build their stores on `db` (see features.ts), storage imports none of them.
 */
export interface Storage {
  readonly kind: 'sqlite' | 'postgres';
  /** The one query layer, for every feature's own queries. */
  readonly db: Kysely<Database>;
  /** Where the data lives, for the start-up log: the SQLite file, or the PostgreSQL URL without password. */
  readonly location: string;
  /** True when the database answers. */
  ping(): Promise<boolean>;
  /** Closes the database (after the SQLite checkpointer). Close the features' stores first. */
  close(): Promise<void>;
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
  const dialect: Dialect = options.databaseUrl
    ? openPostgresDialect(options.databaseUrl)
    : openSqliteDialect(options.dataDir);
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
