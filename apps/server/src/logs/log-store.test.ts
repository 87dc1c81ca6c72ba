import { expect, it } from 'vitest';
import { openStorage, type StoredLogRecord } from '../storage/storage.js';
import { forEachDatabase } from '../storage/test-databases.js';

let sequence = 0;
function record(tenantId: string, text = `{"n":${sequence}}`): StoredLogRecord {
  sequence += 1;
  return {
    tenantId,
    cid: `bafk_test_${sequence}`,
    bytes: new TextEncoder().encode(text),
    requestId: `req_${sequence}`,
    createdAt: new Date(),
  };
}

forEachDatabase('the score log', ({ storage, database }) => {
  it('returns exactly the bytes appended', async () => {
    const bytes = new Uint8Array([0x7b, 0x7d, 0x00, 0xff, 0xc3, 0xa9]); // any bytes, not only UTF-8 text
    const appended = { ...record('tenant_a'), bytes };
    await storage().appendLogRecord(appended);
    const read = await storage().getLogRecord('tenant_a', appended.cid);
    expect(Buffer.isBuffer(read)).toBe(true);
    expect(new Uint8Array(read ?? [])).toEqual(bytes);
  });

  it('does not let a tenant read another tenant’s record', async () => {
    const appended = record('tenant_a');
    await storage().appendLogRecord(appended);
    expect(await storage().getLogRecord('tenant_b', appended.cid)).toBeUndefined();
  });

  it('answers undefined for a CID never appended', async () => {
    expect(await storage().getLogRecord('tenant_a', 'bafk_unknown')).toBeUndefined();
  });

  it('accepts the same record twice and keeps the first', async () => {
    const appended = record('tenant_a');
    await storage().appendLogRecord(appended);
    await storage().appendLogRecord({ ...appended, requestId: 'req_retry' });
    await Promise.all([storage().appendLogRecord(appended), storage().appendLogRecord(appended)]);
    const rows = await storage()
      .db.selectFrom('log_records')
      .select(['request_id'])
      .where('cid', '=', appended.cid)
      .execute();
    expect(rows).toEqual([{ request_id: appended.requestId }]);
  });

  it('commits 500 concurrent appends in far fewer transactions, all visible to another connection', async () => {
    const before = storage().logCommitStats;
    const records = Array.from({ length: 500 }, () => record('tenant_bulk'));
    await Promise.all(records.map((appended) => storage().appendLogRecord(appended)));
    const after = storage().logCommitStats;
    expect(after.committedItems - before.committedItems).toBe(500);
    expect(after.flushes - before.flushes).toBeLessThanOrEqual(2); // 500 fit in one batch of 512

    const other = await openStorage(database().options);
    try {
      const count = await other.db
        .selectFrom('log_records')
        .select((eb) => eb.fn.countAll<number | string>().as('count'))
        .where('tenant_id', '=', 'tenant_bulk')
        .executeTakeFirstOrThrow();
      expect(Number(count.count)).toBe(500);
    } finally {
      await other.close();
    }
  });

  it('rejects only the append that cannot be stored; the others of its batch commit', async () => {
    const good = [record('tenant_fail'), record('tenant_fail')];
    // A NULL tenant violates NOT NULL in the database itself, failing the whole transaction.
    const bad = { ...record('tenant_fail'), tenantId: null as unknown as string };
    const outcomes = await Promise.allSettled([...good, bad].map((r) => storage().appendLogRecord(r)));
    // One bad row never fails another request's record (the isolation principle of issue #10).
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
    for (const r of good) expect(await storage().getLogRecord('tenant_fail', r.cid)).toBeDefined();
    // The next batch is not affected.
    const later = record('tenant_fail');
    await storage().appendLogRecord(later);
    expect(await storage().getLogRecord('tenant_fail', later.cid)).toBeDefined();
  });
});

forEachDatabase(
  'the score log with a small batch cap',
  ({ storage }) => {
    it('splits a burst into batches of at most groupCommitMaxBatch records', async () => {
      await Promise.all(Array.from({ length: 250 }, () => storage().appendLogRecord(record('tenant_cap'))));
      expect(storage().logCommitStats).toMatchObject({ flushes: 3, committedItems: 250, largestBatch: 100 });
    });
  },
  { groupCommitMaxBatch: 100 },
);
