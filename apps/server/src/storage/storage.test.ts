import { cidOfBytes } from '@scenario-scoring/engine';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createTestDatabase, forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { MIGRATIONS } from './migrations/index.js';
import { openStorage } from './storage.js';

/** The record named `name`, under its own CID. */
const record = (name: string) => {
  const bytes = new TextEncoder().encode(`{"name":"${name}"}`);
  return {
    tenantId: 'tenant_storage',
    cid: cidOfBytes(bytes),
    bytes,
    requestId: 'req_storage',
    createdAt: new Date('2025-01-31T12:00:00.000Z'),
  };
};

forEachDatabase('openStorage', ({ kind, storage, reopen }) => {
  it('creates the tables on first open', async () => {
    const tables = (await storage().db.introspection.getTables()).map((table) => table.name);
    expect(tables).toEqual(expect.arrayContaining(['tenants', 'api_keys', 'log_records']));
  });

  it('answers a ping', async () => {
    expect(await storage().ping()).toBe(true);
  });

  it('runs no migration twice when opened again, and keeps the data', async () => {
    await testFeatures(storage()).logs.append(record('cid_reopen'));
    const { key } = await testFeatures(storage()).keys.create('tenant_storage');
    const again = await reopen();
    const applied = await sql<{ name: string }>`select name from kysely_migration`.execute(again.db);
    expect(applied.rows.map((row) => row.name)).toEqual(Object.keys(MIGRATIONS));
    expect(
      Buffer.from((await testFeatures(again).logs.get('tenant_storage', record('cid_reopen').cid)) ?? []),
    ).toEqual(Buffer.from(record('cid_reopen').bytes));
    expect(await testFeatures(again).keys.find(key)).toMatchObject({ tenantId: 'tenant_storage' });
  });

  it('runs writes known up front as one transaction (transact): all of them, or none when one fails; fenced ones only when their fence changed a row', async () => {
    const { db, transact } = storage();
    const tenant = (id: string) =>
      db.insertInto('tenants').values({ id, created_at: '2025-01-31T12:00:00.000Z' }).compile();
    const tenantIds = async () =>
      (
        await db.selectFrom('tenants').select('id').where('id', 'like', 'tenant_tx_%').orderBy('id').execute()
      ).map((row) => row.id);
    const results = await transact([tenant('tenant_tx_a'), tenant('tenant_tx_b')]);
    expect(results.map((result) => result?.numAffectedRows)).toEqual([1n, 1n]);
    await expect(transact([tenant('tenant_tx_c'), tenant('tenant_tx_a')])).rejects.toThrow(
      /unique|UNIQUE|duplicate/,
    );
    expect(await tenantIds()).toEqual(['tenant_tx_a', 'tenant_tx_b']);
    // Fenced steps run only when their fence changed a row.
    const touch = (id: string) =>
      db
        .updateTable('tenants')
        .set({ created_at: '2025-02-01T00:00:00.000Z' })
        .where('id', '=', id)
        .compile();
    const fenced = await transact([
      touch('tenant_tx_a'),
      touch('tenant_tx_missing'),
      { statement: tenant('tenant_tx_d'), onlyIfChanged: 0 },
      { statement: tenant('tenant_tx_e'), onlyIfChanged: 1 },
      { statement: tenant('tenant_tx_f'), onlyIfChanged: 3 },
    ]);
    expect(fenced.map((result) => result?.numAffectedRows)).toEqual([1n, 0n, 1n, undefined, undefined]);
    expect(await tenantIds()).toEqual(['tenant_tx_a', 'tenant_tx_b', 'tenant_tx_d']);
    // A fence is a write that returns no rows: one that returns rows fails the transaction, on both databases.
    await expect(
      transact([
        db.selectFrom('tenants').select('id').where('id', '=', 'tenant_tx_a').compile(),
        { statement: tenant('tenant_tx_g'), onlyIfChanged: 0 },
      ]),
    ).rejects.toThrow('a fence statement must not return rows');
  });

  it('flushes pending appends on close', async () => {
    const pending = [1, 2, 3].map((i) => testFeatures(storage()).logs.append(record(`cid_close_${i}`)));
    const again = await reopen(); // closes the current storage without waiting for the appends first
    await Promise.all(pending);
    for (const i of [1, 2, 3])
      expect(
        await testFeatures(again).logs.get('tenant_storage', record(`cid_close_${i}`).cid),
      ).toBeDefined();
  });

  it('refuses appends after close, and a closed storage does not answer pings', async () => {
    const closed = storage();
    await reopen();
    await expect(testFeatures(closed).logs.append(record('cid_after_close'))).rejects.toThrow(/closed/);
    expect(await closed.ping()).toBe(false);
  });

  if (kind === 'sqlite') {
    it('keeps SQLite in WAL mode with synchronous=FULL, so a commit is on disk', async () => {
      const db = storage().db;
      const journal = await sql<{ journal_mode: string }>`pragma journal_mode`.execute(db);
      const synchronous = await sql<{ synchronous: number }>`pragma synchronous`.execute(db);
      const foreignKeys = await sql<{ foreign_keys: number }>`pragma foreign_keys`.execute(db);
      expect(journal.rows[0]?.journal_mode).toBe('wal');
      expect(synchronous.rows[0]?.synchronous).toBe(2); // FULL
      expect(foreignKeys.rows[0]?.foreign_keys).toBe(1);
      expect(storage().location).toMatch(/scenario-scoring\.sqlite$/);
    });
  }
});

describe('openStorage on one PostgreSQL database from several instances at once', () => {
  it('migrates once, the others waiting on the advisory lock', async () => {
    const database = await createTestDatabase('postgres');
    try {
      const storages = await Promise.all(Array.from({ length: 4 }, () => openStorage(database.options)));
      for (const storage of storages) {
        const applied = await sql<{ name: string }>`select name from kysely_migration`.execute(storage.db);
        expect(applied.rows).toHaveLength(Object.keys(MIGRATIONS).length);
      }
      await Promise.all(storages.map((storage) => storage.close()));
    } finally {
      await database.dispose();
    }
  });
});

describe('openStorage with SQLite', () => {
  it('creates DATA_DIR when it does not exist', async () => {
    const database = await createTestDatabase('sqlite');
    try {
      const storage = await openStorage({ dataDir: `${database.options.dataDir}/nested/data` });
      expect(await storage.ping()).toBe(true);
      expect(storage.location).toBe(`${database.options.dataDir}/nested/data/scenario-scoring.sqlite`);
      await storage.close();
    } finally {
      await database.dispose();
    }
  });
});
