import type { Erasure, ErasureLogCidList, Problem } from '@scenario-scoring/api-types';
import { scoreAndLog } from '@scenario-scoring/engine';
import { CompiledQuery, type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testErasureWorker } from '../../test/support/test-erasure-worker.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';
import { recordStamp } from '../score-log/record-stamp.js';
import { insertLogRecords } from '../score-log/score-log-store.js';
import type { Database } from '../storage/database.js';
import { down, up } from '../storage/migrations/0021-erased-cids-index.js';
import { erasedCidsPage } from './erasure-store.js';

/** More records than an erasure's own resource lists (1,000), so the rest are paged. */
const RECORDS = 1203;

forEachDatabase("an erasure's erased CIDs, paged", ({ storage, kind }) => {
  let server: TestServer;
  let key: string;
  let other: string;
  const tenant = `erased-cids-${kind}`;
  const subject = `many-records-${kind}`;
  const cids: string[] = [];
  let erasure: Erasure;

  const get = async <T>(path: string, as = key) => {
    const response = await server.request(path, { key: as });
    return { status: response.status, body: (await response.json()) as T };
  };

  beforeAll(async () => {
    server = await startTestServer({ storage: storage() });
    ({ key } = await testFeatures(storage()).keys.create(tenant));
    ({ key: other } = await testFeatures(storage()).keys.create(`${tenant}-other`));
    const at = new Date(Date.now() - 60_000);
    const records = Array.from({ length: RECORDS }, (_, item) => {
      const logged = scoreAndLog(
        subject,
        { jurisdiction: 'DE', utilization: (item % 90) / 100 },
        recordStamp({ kind: 'run_item', run_id: 'run_erasedcids', item }, at),
      );
      cids.push(logged.logCid);
      return {
        tenantId: tenant,
        cid: logged.logCid,
        bytes: logged.logBytes,
        requestId: 'run_erasedcids',
        createdAt: at,
        subject,
      };
    });
    cids.sort();
    for (let start = 0; start < RECORDS; start += 500)
      await insertLogRecords(
        storage(),
        records.slice(start, start + 500),
        testFeatures(storage()).subjectKey,
      );
    const accepted = await server.request('/v1/erasures', { key, body: { subject } });
    expect(accepted.status).toBe(202);
    const { id } = (await accepted.json()) as Erasure;
    const worker = testErasureWorker(storage());
    for (
      let round = 0;
      round < 20 && (await get<Erasure>(`/v1/erasures/${id}`)).body.status !== 'completed';
      round++
    )
      await worker.runOnce();
    erasure = (await get<Erasure>(`/v1/erasures/${id}`)).body;
  }, 60_000);
  afterAll(() => server.close());

  it('shows the first 1,000 CIDs on the erasure, in CID order, and says that there are more', () => {
    expect(erasure).toMatchObject({ status: 'completed', log_cids_has_more: true });
    expect(erasure.counts.log_records).toBe(RECORDS);
    expect(erasure.log_cids).toEqual(cids.slice(0, 1000));
  });

  it('lists them all, page by page, following next_cursor', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor === null ? '?limit=500' : `?limit=500&cursor=${cursor}`;
      const { status, body } = await get<ErasureLogCidList>(`/v1/erasures/${erasure.id}/log-cids${query}`);
      expect(status).toBe(200);
      seen.push(...body.data);
      cursor = body.next_cursor;
      pages++;
    } while (cursor !== null);
    expect(pages).toBe(3);
    expect(seen).toEqual(cids);
    // The default page is the largest, 1,000.
    const first = await get<ErasureLogCidList>(`/v1/erasures/${erasure.id}/log-cids`);
    expect(first.body.data).toEqual(cids.slice(0, 1000));
    expect(first.body.next_cursor).not.toBeNull();
  });

  it("answers a cursor it did not make, a page too large, another tenant's erasure and a pending one as documented", async () => {
    const forged = await get<Problem>(
      `/v1/erasures/${erasure.id}/log-cids?cursor=${Buffer.from('not-a-cid').toString('base64url')}`,
    );
    expect(forged.status).toBe(400);
    expect(forged.body).toMatchObject({ code: 'validation_failed', errors: [{ path: '/query/cursor' }] });
    const tooLarge = await get<Problem>(`/v1/erasures/${erasure.id}/log-cids?limit=1001`);
    expect(tooLarge.status).toBe(400);
    expect(tooLarge.body.code).toBe('validation_failed');
    const foreign = await get<Problem>(`/v1/erasures/${erasure.id}/log-cids`, other);
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe('not_found');
    const pending = await server.request('/v1/erasures', { key, body: { subject: `${subject}-later` } });
    const { id } = (await pending.json()) as Erasure;
    expect(await get<ErasureLogCidList>(`/v1/erasures/${id}/log-cids`)).toEqual({
      status: 200,
      body: { data: [], next_cursor: null },
    });
    // A cursor it did not make is refused whatever the erasure's state.
    const early = await get<Problem>(`/v1/erasures/${id}/log-cids?cursor=abc`);
    expect(early.status).toBe(400);
    expect(early.body.code).toBe('validation_failed');
  });

  it("reads a page through log_records_erasure_idx in CID order: no sort of all the erasure's records", async () => {
    const db = storage().db;
    const query = erasedCidsPage(db, tenant, erasure.id, cids[10] as string, 1001).compile();
    const lines = await plan(db, kind, query);
    expect(
      lines.some((line) => line.includes('log_records_erasure_idx')),
      lines.join('\n'),
    ).toBe(true);
    expect(lines.filter((line) => /USE TEMP B-TREE|Sort\b|^SCAN log_records\b|Seq Scan/.test(line))).toEqual(
      [],
    );
  });

  it('migration 0021 puts the CID into the index, and its down takes it out', async () => {
    const db = storage().db;
    const columns = async () =>
      kind === 'sqlite'
        ? (
            await sql<{
              name: string;
            }>`select name from pragma_index_info('log_records_erasure_idx')`.execute(db)
          ).rows.map((row) => row.name)
        : (
            await sql<{ column: string }>`
              select a.attname as column from pg_index i
              join pg_class c on c.oid = i.indexrelid
              join pg_attribute a on a.attrelid = i.indrelid and a.attnum = any(i.indkey)
              where c.relname = 'log_records_erasure_idx'
              order by array_position(i.indkey, a.attnum)`.execute(db)
          ).rows.map((row) => row.column);
    expect(await columns()).toEqual(['tenant_id', 'erasure_id', 'cid']);
    await down(db);
    expect(await columns()).toEqual(['tenant_id', 'erasure_id']);
    await up(db);
    expect(await columns()).toEqual(['tenant_id', 'erasure_id', 'cid']);
  });
});

/** The plan's lines: SQLite's `explain query plan` details, PostgreSQL's `explain` with scans made dear. */
async function plan(db: Kysely<Database>, kind: string, query: CompiledQuery): Promise<string[]> {
  if (kind === 'sqlite') {
    const rows = await db.executeQuery<{ detail: string }>(
      CompiledQuery.raw(`explain query plan ${query.sql}`, [...query.parameters]),
    );
    return rows.rows.map((row) => row.detail);
  }
  return db.connection().execute(async (connection) => {
    await sql`set enable_seqscan = off`.execute(connection);
    const rows = await connection.executeQuery<{ 'QUERY PLAN': string }>(
      CompiledQuery.raw(`explain ${query.sql}`, [...query.parameters]),
    );
    await sql`reset enable_seqscan`.execute(connection);
    return rows.rows.map((row) => row['QUERY PLAN']);
  });
}
