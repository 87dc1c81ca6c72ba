import type { Erasure, ErasureLogCidList, Problem } from '@scenario-scoring/api-types';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { countingLogWrites, erasureLogsOf, logSubjectRecords } from '../../test/support/erasure-records.js';
import { queryPlan } from '../../test/support/query-plan.js';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testErasureWorker } from '../../test/support/test-erasure-worker.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';
import { OutboxSignal } from '../events/event-outbox.js';
import { down, up } from '../storage/migrations/0021-erased-cids-index.js';
import { ERASURE_LOG_CHUNK, processErasure } from './erasure-processor.js';
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

  const logRecordsOf = (who: string) => logSubjectRecords(storage(), tenant, who, 'run_erasedcids', RECORDS);
  const erasureLogs = (id: string) => erasureLogsOf(storage(), tenant, id);

  beforeAll(async () => {
    server = await startTestServer({ storage: storage() });
    ({ key } = await testFeatures(storage()).keys.create(tenant));
    ({ key: other } = await testFeatures(storage()).keys.create(`${tenant}-other`));
    cids.push(...(await logRecordsOf(subject)));
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

  it(`logs the erasure in erasure-log/1 records of at most ${ERASURE_LOG_CHUNK} CIDs, in CID order, under one time`, async () => {
    const logs = await erasureLogs(erasure.id);
    expect(logs.map((log) => log.log_cids.length)).toEqual([1000, RECORDS - 1000]);
    expect(logs.flatMap((log) => log.log_cids)).toEqual(cids);
    const { erased_at } = await storage()
      .db.selectFrom('erasures')
      .select('erased_at')
      .where('id', '=', erasure.id)
      .executeTakeFirstOrThrow();
    expect(new Set(logs.map((log) => log.erased_at))).toEqual(new Set([erased_at]));
    expect(logs.every((log) => log.schema === 'erasure-log/1' && log.erasure_id === erasure.id)).toBe(true);
  });

  it('logs each chunk in a transaction of its own, and a worker stopped between them resumes without repeating one', async () => {
    const who = `${subject}-resumed`;
    const erased = await logRecordsOf(who);
    const accepted = await server.request('/v1/erasures', { key, body: { subject: who } });
    const { id } = (await accepted.json()) as Erasure;
    const row = () =>
      storage().db.selectFrom('erasures').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    // Stops the worker once a transaction has appended an erasure-log record.
    const counting = countingLogWrites(storage());
    const context = {
      storage: counting.storage,
      subjectKey: testFeatures(storage()).subjectKey,
      outbox: new OutboxSignal(),
      now: () => new Date(),
      batchSize: 500,
    };
    expect(await processErasure(await row(), { ...context, stopping: () => counting.logged() >= 1 })).toBe(
      'stopped',
    );
    const stopped = await row();
    expect(stopped.status).not.toBe('completed');
    expect(stopped.progress).toMatch(/^log:\d{4}-\d\d-\d\dT[\d:.]+Z\|bafkrei[a-z2-7]{52}$/);
    const first = await erasureLogs(id);
    expect(first.map((log) => log.log_cids)).toEqual([erased.slice(0, 1000)]);
    // Another worker takes it up from the row as stored.
    expect(await processErasure(stopped, context)).toBe('completed');
    const logs = await erasureLogs(id);
    expect(logs.map((log) => log.log_cids.length)).toEqual([1000, RECORDS - 1000]);
    expect(logs.flatMap((log) => log.log_cids)).toEqual(erased);
    const done = await row();
    expect(new Set(logs.map((log) => log.erased_at))).toEqual(new Set([done.erased_at]));
    expect(done).toMatchObject({ status: 'completed', subject: null, subject_key: null });
    // A worker still holding the old progress changes nothing: its chunk is fenced off.
    expect(await processErasure(stopped, context)).toBe('waiting');
    expect((await erasureLogs(id)).length).toBe(2);
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
    const lines = await queryPlan(db, kind, query);
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
