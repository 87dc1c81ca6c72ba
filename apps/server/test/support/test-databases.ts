import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe } from 'vitest';
import { openStorage, type Storage, type StorageOptions } from '../../src/storage/storage.js';
import { closeTestStorage } from './test-features.js';

/** The two databases every storage-backed suite runs against. */
export type DatabaseKind = Storage['kind'];
export const DATABASE_KINDS: readonly DatabaseKind[] = ['sqlite', 'postgres'];

/** The PostgreSQL maintenance database test databases are created from; `TEST_DATABASE_URL` overrides it. */
export const TEST_MAINTENANCE_URL =
  process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

/** A fresh, empty database (a temp dir for SQLite, a new PostgreSQL database) and how to throw it away. */
export interface TestDatabase {
  readonly kind: DatabaseKind;
  /** Options that open this database with `openStorage`. */
  readonly options: StorageOptions;
  /** Drops the database or deletes the directory. Close every Storage on it first. */
  dispose(): Promise<void>;
}

/** Creates a fresh database of `kind`: SQLite in a new temp dir, or `ss_test_<random>` on PostgreSQL. */
export async function createTestDatabase(kind: DatabaseKind): Promise<TestDatabase> {
  const dataDir = await mkdtemp(join(tmpdir(), 'ss-test-'));
  const removeDir = () => rm(dataDir, { recursive: true, force: true });
  if (kind === 'sqlite') return { kind, options: { dataDir }, dispose: removeDir };

  const name = `ss_test_${randomBytes(8).toString('hex')}`;
  await onMaintenanceDatabase((client) => client.query(`CREATE DATABASE ${name}`));
  const url = new URL(TEST_MAINTENANCE_URL);
  url.pathname = `/${name}`;
  return {
    kind,
    options: { dataDir, databaseUrl: url.toString() },
    async dispose() {
      // FORCE ends connections a failed test may have leaked, so the drop cannot hang or fail.
      await onMaintenanceDatabase((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
      await removeDir();
    },
  };
}

async function onMaintenanceDatabase(action: (client: pg.Client) => Promise<unknown>): Promise<void> {
  const client = new pg.Client({ connectionString: TEST_MAINTENANCE_URL });
  await client.connect();
  try {
    await action(client);
  } finally {
    await client.end();
  }
}

/** What a suite registered with `forEachDatabase` gets. */
export interface TestStorageContext {
  readonly kind: DatabaseKind;
  /** The open storage of this suite (valid inside tests and hooks). */
  storage(): Storage;
  /** The database under it, e.g. to open a second Storage on the same data. */
  database(): TestDatabase;
  /** Closes the current storage and opens a new one on the same database, as a restart would. */
  reopen(options?: Partial<StorageOptions>): Promise<Storage>;
}

/**
 * Registers `suite` once per database (`<name> (sqlite)`, `<name> (postgres)`), each with its own fresh
 * database opened in beforeAll and closed and dropped in afterAll. Tests in a suite share that database,
 * so use distinct tenant ids or CIDs per test.
 */
export function forEachDatabase(
  name: string,
  suite: (context: TestStorageContext) => void,
  options: Partial<StorageOptions> = {},
): void {
  for (const kind of DATABASE_KINDS) {
    describe(`${name} (${kind})`, () => {
      let database: TestDatabase | undefined;
      let storage: Storage | undefined;
      beforeAll(async () => {
        database = await createTestDatabase(kind);
        storage = await openStorage({ ...database.options, ...options });
      });
      afterAll(async () => {
        if (storage) await closeTestStorage(storage);
        await database?.dispose();
      });
      suite({
        kind,
        storage: () => required(storage),
        database: () => required(database),
        async reopen(reopenOptions = {}) {
          await closeTestStorage(required(storage));
          storage = await openStorage({ ...required(database).options, ...options, ...reopenOptions });
          return storage;
        },
      });
    });
  }
}

function required<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('used outside a test: the storage opens in beforeAll');
  return value;
}
