import { recordHash } from '@scenario-scoring/tlog';
import { type Kysely, sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import { expect, it } from 'vitest';
import { logRecords, testRecord, testSequencer } from '../../../test/support/log-fixtures.js';
import { forEachDatabase } from '../../../test/support/test-databases.js';
import { proveInclusion } from '../../verifiable-log/verifiable-log-service.js';
import type { Database } from '../database.js';
import { migrateToLatest } from '../migrate.js';
import { MIGRATIONS } from './index.js';

const TENANT = 'migrated';

function migrateTo(db: Kysely<Database>, name: string) {
  return new Migrator({ db, provider: { getMigrations: async () => ({ ...MIGRATIONS }) } }).migrateTo(name);
}

forEachDatabase('migration 0006 (log leaves out of log_records)', ({ storage, kind }) => {
  it('carries leaf indexes and waiting records both ways, and sequencing goes on after it', async () => {
    const records = Array.from({ length: 10 }, (_, n) => testRecord(TENANT, n));
    const log = testSequencer(storage());
    await logRecords(storage(), records.slice(0, 6));
    await log.sequencer.sequenceOnce();
    await logRecords(storage(), records.slice(6, 8));
    const db = storage().db;
    const leaves = await db.selectFrom('log_leaves').selectAll().orderBy('leaf_index').execute();
    expect(leaves).toHaveLength(6);

    // Down to 0005: the indexes are back in log_records, the waiting records have none.
    expect((await migrateTo(db, '0005-transparency-log')).error).toBeUndefined();
    const { rows } = await sql<{ cid: string; leaf_index: number | string | null }>`
      select cid, leaf_index from log_records where tenant_id = ${TENANT}`.execute(db);
    const indexOf = new Map(
      rows.map((row) => [row.cid, row.leaf_index === null ? null : Number(row.leaf_index)]),
    );
    for (const leaf of leaves) expect(indexOf.get(leaf.cid)).toBe(Number(leaf.leaf_index));
    for (const record of records.slice(6, 8)) expect(indexOf.get(record.cid)).toBeNull();

    // Up again: the same leaves, the two waiting records queued with their leaf hashes.
    await migrateToLatest(db, kind);
    expect(await db.selectFrom('log_leaves').selectAll().orderBy('leaf_index').execute()).toEqual(leaves);
    const queued = await db
      .selectFrom('log_leaf_queue')
      .select(['cid', 'leaf_hash'])
      .orderBy('cid')
      .execute();
    const waiting = records.slice(6, 8).sort((a, b) => (a.cid < b.cid ? -1 : 1));
    expect(queued.map((row) => [row.cid, Buffer.from(row.leaf_hash)])).toEqual(
      await Promise.all(waiting.map(async (record) => [record.cid, await recordHash(record.bytes)])),
    );

    await logRecords(storage(), records.slice(8));
    expect(await log.sequencer.sequenceOnce()).toEqual([{ tenantId: TENANT, leaves: 4, treeSize: 10 }]);
    for (const record of records) {
      await expect(proveInclusion(db, TENANT, record.cid)).resolves.toMatchObject({
        checkpoint: { treeSize: 10 },
      });
    }
  });
});
