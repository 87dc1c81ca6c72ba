import { expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { insertRows, type RowInsert, rowInsertQuery } from './row-insert.js';

const LOG_INSERT: RowInsert<{
  tenant_id: string;
  cid: string;
  bytes: Uint8Array;
  request_id: string;
  created_at: string;
}> = {
  table: 'log_records',
  columns: ['tenant_id', 'cid', 'bytes', 'request_id', 'created_at'],
  onConflictDoNothing: ['tenant_id', 'cid'],
};
const row = (cid: string, text: string) => ({
  tenant_id: 'tenant_rows',
  cid,
  bytes: new TextEncoder().encode(text),
  request_id: 'req_rows',
  created_at: '2026-11-24T07:00:00.000Z',
});

forEachDatabase('insertRows', ({ storage }) => {
  it("is the statement Kysely's query builder makes for the same rows, text and parameters", () => {
    const { db } = storage();
    const rows = [row('cid_a', 'a'), row('cid_b', 'b'), row('cid_c', 'c')];
    const built = db
      .insertInto('log_records')
      .values(rows)
      .onConflict((conflict) => conflict.columns(['tenant_id', 'cid']).doNothing())
      .compile();
    const ours = rowInsertQuery(db, LOG_INSERT, rows);
    expect(ours.sql).toBe(built.sql);
    expect(ours.parameters).toEqual(built.parameters);
    // Another row count is another text, made once and then reused.
    expect(rowInsertQuery(db, LOG_INSERT, rows.slice(0, 2)).sql).toBe(
      db
        .insertInto('log_records')
        .values(rows.slice(0, 2))
        .onConflict((c) => c.columns(['tenant_id', 'cid']).doNothing())
        .compile().sql,
    );
  });

  it('inserts the rows, and leaves a row already present alone', async () => {
    const { db } = storage();
    await insertRows(db, LOG_INSERT, [row('cid_1', 'first'), row('cid_2', 'second')]);
    await insertRows(db, LOG_INSERT, [row('cid_2', 'changed'), row('cid_3', 'third')]);
    await insertRows(db, LOG_INSERT, []);
    const stored = await db
      .selectFrom('log_records')
      .select(['cid', 'bytes'])
      .where('tenant_id', '=', 'tenant_rows')
      .orderBy('cid')
      .execute();
    expect(stored.map((r) => [r.cid, Buffer.from(r.bytes).toString()])).toEqual([
      ['cid_1', 'first'],
      ['cid_2', 'second'],
      ['cid_3', 'third'],
    ]);
  });
});
