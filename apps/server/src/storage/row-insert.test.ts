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

  it('returns the columns asked for, as the builder does', () => {
    const { db } = storage();
    const rows = [row('cid_a', 'a'), row('cid_b', 'b')];
    const built = db
      .insertInto('log_records')
      .values(rows)
      .onConflict((conflict) => conflict.columns(['tenant_id', 'cid']).doNothing())
      .returning(['cid', 'created_at'])
      .compile();
    const ours = rowInsertQuery(db, { ...LOG_INSERT, returning: ['cid', 'created_at'] }, rows);
    expect(ours.sql).toBe(built.sql);
    expect(ours.parameters).toEqual(built.parameters);
    // The same shape without `returning` is another text.
    expect(rowInsertQuery(db, LOG_INSERT, rows).sql).not.toContain('returning');
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

  it('binds a value every row shares once, numbered, and stores the same rows as the plain statement', async () => {
    const { db } = storage();
    const shared = ['tenant_id', 'request_id', 'created_at'] as const;
    const rows = [row('cid_s1', 'one'), row('cid_s2', 'two'), row('cid_s3', 'three')];
    const query = rowInsertQuery(db, LOG_INSERT, rows, shared);
    const [tenant, request, at] = ['tenant_rows', 'req_rows', '2026-11-24T07:00:00.000Z'];
    expect(query.parameters.slice(0, 3)).toEqual([tenant, request, at]);
    expect(query.parameters.slice(3)).toEqual(rows.flatMap((r) => [r.cid, r.bytes]));
    // The shared columns first, numbered; each row's own values after them (bare on SQLite, numbered on).
    expect(query.sql).toMatch(
      /^insert into "log_records" \("tenant_id", "request_id", "created_at", "cid", "bytes"\) values /,
    );
    expect(query.sql).toContain(
      query.sql.includes('$1')
        ? '($1, $2, $3, $4, $5), ($1, $2, $3, $6, $7), ($1, $2, $3, $8, $9) on conflict'
        : '(?1, ?2, ?3, ?, ?), (?1, ?2, ?3, ?, ?), (?1, ?2, ?3, ?, ?) on conflict',
    );
    await insertRows(db, LOG_INSERT, rows, shared);
    const stored = await db
      .selectFrom('log_records')
      .select(['tenant_id', 'cid', 'bytes', 'request_id', 'created_at'])
      .where('tenant_id', '=', tenant)
      .where('cid', 'like', 'cid_s%')
      .orderBy('cid')
      .execute();
    expect(stored.map((r) => ({ ...r, bytes: Buffer.from(r.bytes).toString() }))).toEqual(
      rows.map((r) => ({ ...r, bytes: Buffer.from(r.bytes).toString() })),
    );
    // The trigger queued each of them for its leaf, as with the plain statement.
    const queued = await db
      .selectFrom('log_leaf_queue')
      .select('cid')
      .where('tenant_id', '=', tenant)
      .where('cid', 'like', 'cid_s%')
      .execute();
    expect(queued).toHaveLength(3);
  });

  it('makes the plain statement when the rows differ in a shared column, or for one row', () => {
    const { db } = storage();
    const shared = ['tenant_id', 'request_id', 'created_at'] as const;
    const plain = (rows: ReturnType<typeof row>[]) =>
      db
        .insertInto('log_records')
        .values(rows)
        .onConflict((conflict) => conflict.columns(['tenant_id', 'cid']).doNothing())
        .compile();
    const differing = [row('cid_d1', 'a'), { ...row('cid_d2', 'b'), request_id: 'req_other' }];
    expect(rowInsertQuery(db, LOG_INSERT, differing, shared).sql).toBe(plain(differing).sql);
    expect(rowInsertQuery(db, LOG_INSERT, differing, shared).parameters).toEqual(plain(differing).parameters);
    const one = [row('cid_o1', 'a')];
    expect(rowInsertQuery(db, LOG_INSERT, one, shared).sql).toBe(plain(one).sql);
  });
});
