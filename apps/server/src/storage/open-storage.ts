import { join } from 'node:path';
import { type Dialect, Kysely, sql } from 'kysely';
import { OutboxSignal } from '../events/event-outbox.js';
import { createApiKeyStore } from '../keys/api-key-store.js';
import { createLogStore } from '../logs/log-store.js';
import type { Database } from './database.js';
import { migrateToLatest } from './migrate.js';
import { openPostgresDialect } from './postgres-database.js';
import { SqliteCheckpointer } from './sqlite-checkpointer.js';
import { openSqliteDialect, SQLITE_FILE_NAME } from './sqlite-database.js';
import type { Storage, StorageOptions } from './storage.js';

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
  const outbox = new OutboxSignal();
  const logs = createLogStore(db, { maxBatch: options.groupCommitMaxBatch, outbox });
  const keys = createApiKeyStore(db);
  let closing: Promise<void> | undefined;

  return {
    kind,
    db,
    outbox,
    runQueue: new OutboxSignal(),
    location: options.databaseUrl
      ? redactPassword(options.databaseUrl)
      : join(options.dataDir, SQLITE_FILE_NAME),
    appendLogRecord: (record) => logs.append(record),
    getLogRecord: (tenantId, cid) => logs.get(tenantId, cid),
    get logCommitStats() {
      return logs.stats;
    },
    createApiKey: (tenantId) => keys.create(tenantId),
    findApiKey: (key) => keys.find(key),
    revokeApiKey: (keyId) => keys.revoke(keyId),
    countApiKeys: () => keys.countActive(),
    async ping() {
      try {
        await sql`select 1`.execute(db);
        return true;
      } catch {
        return false;
      }
    },
    close() {
      closing ??= logs
        .close()
        .finally(() => checkpointer?.close())
        .finally(() => db.destroy());
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
