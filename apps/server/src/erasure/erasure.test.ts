import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type {
  Erasure,
  Problem,
  Run,
  RunResultList,
  ScoreResponse,
  SubjectRecordList,
} from '@scenario-scoring/api-types';
import { cidOfBytes } from '@scenario-scoring/engine';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { testSequencer } from '../../test/support/log-fixtures.js';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testErasureWorker } from '../../test/support/test-erasure-worker.js';
import { testFeatures } from '../../test/support/test-features.js';
import { testRunWorker, waitForRunEnd } from '../../test/support/test-run-worker.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';
import type { Clock } from '../common/clock.js';
import { newId } from '../common/ids.js';
import { EnvReader } from '../config/env-reader.js';
import { OutboxSignal } from '../events/event-outbox.js';
import { readTenantUsage } from '../quota/tenant-usage.js';
import { loadConfig } from '../server-config.js';
import { unpackRecord } from '../storage/record-codec.js';
import { parseRetention, readErasureConfig } from './erasure-config.js';

/** Every file under `dir`, recursively. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(
    entries.map((entry) =>
      entry.isDirectory() ? filesUnder(join(dir, entry.name)) : Promise.resolve([join(dir, entry.name)]),
    ),
  );
  return nested.flat();
}

// A thin US-CA file is escalated (p50 500 below the threshold): its `policy.escalated` event carries the subject.
const ESCALATED = { jurisdiction: 'US-CA' };
const PLAIN = { jurisdiction: 'GB', on_time_ratio: 0.97, utilization: 0.2, history_months: 120 };

forEachDatabase('erasure by subject', ({ storage, database, kind }) => {
  let server: TestServer;
  let alice: string;
  let bob: string;
  const subject = `erase-me-${randomBytes(6).toString('hex')}`;
  // Several batches per phase, as a large erasure has.
  const erasureWorker = (erasureQueue = new OutboxSignal(), settleMs = 0) =>
    testErasureWorker(storage(), { erasureQueue, config: { batchSize: 2, settleMs } });

  beforeAll(async () => {
    server = await startTestServer({ storage: storage() });
    ({ key: alice } = await testFeatures(storage()).keys.create(`alice-${kind}`));
    ({ key: bob } = await testFeatures(storage()).keys.create(`bob-${kind}`));
  });
  afterAll(() => server.close());

  const score = async (key: string, who: string, context: object, headers: Record<string, string> = {}) => {
    const response = await server.request('/v1/scoring/score', {
      key,
      body: { subject: who, context },
      headers,
    });
    expect(response.status).toBe(200);
    return ((await response.json()) as ScoreResponse).log_cid;
  };
  const getErasure = async (id: string) =>
    (await (await server.request(`/v1/erasures/${id}`, { key: alice })).json()) as Erasure;

  it('erases every place the subject lives, waits for a run holding it, keeps later records and other tenants', async () => {
    // Escalation events (which carry the subject) are written only for a tenant with a webhook taking them.
    for (const key of [alice, bob]) {
      const hook = await server.request('/v1/webhooks/register', {
        key,
        body: { url: 'http://127.0.0.1:9/hook', events: ['policy.escalated'] },
      });
      expect(hook.status).toBe(201);
    }
    const before = [await score(alice, subject, ESCALATED), await score(alice, subject, PLAIN)];
    const other = await score(alice, 'someone-else', ESCALATED);
    const bobs = await score(bob, subject, ESCALATED);
    // A run holding the subject, queued (not processed) when the erasure begins.
    const created = await server.request('/v1/scoring/runs', {
      key: alice,
      body: {
        items: [
          { subject, context: ESCALATED },
          { subject: 'someone-else', context: PLAIN },
        ],
      },
    });
    const run = (await created.json()) as Run;

    const listed = await server.request('/v1/subjects/records', { key: alice, body: { subject } });
    expect(listed.status).toBe(200);
    const list = (await listed.json()) as SubjectRecordList;
    expect(list.data.map((record) => record.log_cid).sort()).toEqual([...before].sort());
    expect(list.data.every((record) => record.kind === 'score')).toBe(true);

    const accepted = await server.request('/v1/erasures', { key: alice, body: { subject } });
    expect(accepted.status).toBe(202);
    const erasure = (await accepted.json()) as Erasure;
    expect(erasure).toMatchObject({ kind: 'subject', status: 'pending', log_cids: [] });
    expect(accepted.headers.get('location')).toBe(`/v1/erasures/${erasure.id}`);
    expect(JSON.stringify(erasure)).not.toContain(subject);

    // Created after the erasure began: kept.
    await new Promise((resolve) => setTimeout(resolve, 5));
    const after = await score(alice, subject, { ...PLAIN, utilization: 0.21 });

    // The run holding the subject is still queued: the erasure waits for it.
    expect(await erasureWorker().runOnce()).toBe(0);
    expect((await getErasure(erasure.id)).status).toBe('pending');
    const runWorker = testRunWorker(storage());
    runWorker.start();
    try {
      await waitForRunEnd(server, alice, run.id);
    } finally {
      await runWorker.stop();
    }
    // The run item's record is listed with the subject's scorings, in CID order (it is found through its
    // run item: migration 0024), and the other item's is not.
    const itemCid = (
      await storage()
        .db.selectFrom('run_items')
        .select('log_cid')
        .where('run_id', '=', run.id)
        .where('item_index', '=', 0)
        .executeTakeFirstOrThrow()
    ).log_cid as string;
    const withItem = (await (
      await server.request('/v1/subjects/records', { key: alice, body: { subject } })
    ).json()) as SubjectRecordList;
    expect(withItem.data.map((record) => record.log_cid)).toEqual([...before, after, itemCid].sort());
    expect(withItem.data.find((record) => record.log_cid === itemCid)?.kind).toBe('run_item');
    expect(await erasureWorker().runOnce()).toBe(1);

    const done = await getErasure(erasure.id);
    expect(done.status).toBe('completed');
    const runItem = await storage()
      .db.selectFrom('run_items')
      .select('log_cid')
      .where('run_id', '=', run.id)
      .where('item_index', '=', 0)
      .executeTakeFirstOrThrow();
    // score-log/1 records of equal scorings share one record, so the set of CIDs is counted.
    const erasedSet = new Set([...before, runItem.log_cid as string]);
    expect(done.counts).toMatchObject({
      log_records: erasedSet.size,
      run_items: 1,
      run_inputs: 1,
      events: 2,
    });
    expect(done.log_cids).toEqual([...erasedSet].sort());

    for (const cid of done.log_cids) {
      const response = await server.request(`/v1/logs/${cid}`, { key: alice });
      expect(response.status).toBe(410);
      const problem = (await response.json()) as Problem;
      expect(problem.code).toBe('log_record_erased');
      expect(problem.detail).toContain(erasure.id);
    }
    for (const [key, cid] of [
      [alice, after],
      [alice, other],
      [bob, bobs],
    ] as const) {
      expect((await server.request(`/v1/logs/${cid}`, { key })).status).toBe(200);
    }
    const results = (await (
      await server.request(`/v1/scoring/runs/${run.id}/results`, { key: alice })
    ).json()) as RunResultList;
    expect(results.data[0]).toMatchObject({
      index: 0,
      status: 'error',
      error: { code: 'log_record_erased' },
    });
    // No subject, not a placeholder one could take for someone's.
    expect(results.data[0]).not.toHaveProperty('subject');
    expect(results.data[1]).toMatchObject({ index: 1, status: 'ok', subject: 'someone-else' });
    // Only the record created after the erasure is still listed.
    const relisted = (await (
      await server.request('/v1/subjects/records', { key: alice, body: { subject } })
    ).json()) as SubjectRecordList;
    expect(relisted.data.map((record) => record.log_cid)).toEqual([after]);

    // The erasure is logged: an erasure-log/1 record naming the CIDs, not the subject.
    const logged = await storage()
      .db.selectFrom('log_records')
      .select(['cid', 'bytes'])
      .where('request_id', '=', erasure.id)
      .execute();
    expect(logged).toHaveLength(1);
    const record = JSON.parse(unpackRecord(logged[0]?.bytes ?? new Uint8Array()).toString()) as Record<
      string,
      unknown
    >;
    expect(record).toMatchObject({
      schema: 'erasure-log/1',
      erasure_id: erasure.id,
      log_cids: done.log_cids,
    });
    expect(cidOfBytes(unpackRecord(logged[0]?.bytes ?? new Uint8Array()))).toBe(logged[0]?.cid);
    const event = await storage()
      .db.selectFrom('events')
      .select('payload')
      .where('type', '=', 'subject.erased')
      .executeTakeFirstOrThrow();
    expect(JSON.parse(event.payload).data).toMatchObject({ erasure_id: erasure.id, counts: done.counts });

    // Bob's and the later record hold the subject too: erase them as well; then no file of DATA_DIR
    // (SQLite) and no row (PostgreSQL) may hold it.
    expect((await server.request('/v1/erasures', { key: bob, body: { subject } })).status).toBe(202);
    expect((await server.request('/v1/erasures', { key: alice, body: { subject } })).status).toBe(202);
    expect(await erasureWorker().runOnce()).toBe(2);
    if (kind === 'sqlite') {
      const needle = Buffer.from(subject);
      for (const file of await filesUnder(database().options.dataDir)) {
        expect({ file, found: (await readFile(file)).includes(needle) }).toEqual({ file, found: false });
      }
    } else {
      const { rows } = await sql<{ table_name: string }>`
        select table_name from information_schema.tables where table_schema = 'public'`.execute(storage().db);
      for (const { table_name } of rows) {
        // A row's text form shows bytea as hex: the hex of the subject is looked for too.
        const { rows: holding } = await sql<{ n: string }>`
          select count(*) as n from ${sql.table(table_name)} t
          where t::text like ${`%${subject}%`} or t::text like ${`%${Buffer.from(subject).toString('hex')}%`}`.execute(
          storage().db,
        );
        expect({ table_name, n: Number(holding[0]?.n) }).toEqual({ table_name, n: 0 });
      }
    }
  });

  it("erases every record of the subject created up to the erasure's start and keeps every one created after, with scorings racing it", async () => {
    const racer = `race-${randomBytes(6).toString('hex')}`;
    const worker = erasureWorker();
    worker.start();
    const cids: string[] = [];
    let erasure: Erasure | undefined;
    try {
      // Waves of scorings of the subject; the erasure is asked for in the middle of a wave, and the worker
      // processes it while the later waves are scored.
      for (let wave = 0; wave < 8; wave += 1) {
        const scorings = Array.from({ length: 6 }, (_, i) =>
          score(alice, racer, { ...PLAIN, utilization: (wave * 6 + i) / 100 }),
        );
        if (wave === 3) {
          const accepted = await server.request('/v1/erasures', { key: alice, body: { subject: racer } });
          expect(accepted.status).toBe(202);
          erasure = (await accepted.json()) as Erasure;
        }
        cids.push(...(await Promise.all(scorings)));
      }
      const id = (erasure as Erasure).id;
      const deadline = Date.now() + 20_000;
      while ((await getErasure(id)).status !== 'completed' && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      await worker.stop();
    }
    const done = await getErasure((erasure as Erasure).id);
    expect(done.status).toBe('completed');
    const rows = await storage()
      .db.selectFrom('log_records')
      .select(['cid', 'created_at', 'erasure_id'])
      .where('cid', 'in', cids)
      .execute();
    expect(rows).toHaveLength(cids.length);
    const before = rows.filter((row) => row.created_at <= done.created_at);
    const after = rows.filter((row) => row.created_at > done.created_at);
    // Both sides of the race are exercised.
    expect(before.length).toBeGreaterThan(0);
    expect(after.length).toBeGreaterThan(0);
    expect(before.filter((row) => row.erasure_id !== done.id)).toEqual([]);
    expect(after.filter((row) => row.erasure_id !== null)).toEqual([]);
    expect(done.counts.log_records).toBe(before.length);
    expect([...done.log_cids].sort()).toEqual(before.map((row) => row.cid).sort());
    for (const row of after)
      expect((await server.request(`/v1/logs/${row.cid}`, { key: alice })).status).toBe(200);
  });

  it('when a scoring stamped before the erasure began commits after it was accepted, then the erasure (waiting ERASURE_SETTLE) still erases it', async () => {
    const late = `late-${randomBytes(6).toString('hex')}`;
    const accepted = await server.request('/v1/erasures', { key: alice, body: { subject: late } });
    expect(accepted.status).toBe(202);
    const erasure = (await accepted.json()) as Erasure;
    const worker = erasureWorker(new OutboxSignal(), 600);
    worker.start();
    try {
      // A scoring of the subject stamped just before the erasure began, its commit held past the start.
      await new Promise((resolve) => setTimeout(resolve, 200));
      const bytes = new TextEncoder().encode(JSON.stringify({ subject: late }));
      const record = {
        tenantId: `alice-${kind}`,
        cid: cidOfBytes(bytes),
        bytes,
        requestId: 'req_late',
        createdAt: new Date(Date.parse(erasure.created_at) - 50),
        subject: late,
      };
      await testFeatures(storage()).logs.append(record);
      const deadline = Date.now() + 10_000;
      while ((await getErasure(erasure.id)).status !== 'completed' && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const done = await getErasure(erasure.id);
      expect(done.status, JSON.stringify(done)).toBe('completed');
      expect(done.log_cids).toEqual([record.cid]);
      const row = await storage()
        .db.selectFrom('log_records')
        .select('erasure_id')
        .where('cid', '=', record.cid)
        .executeTakeFirstOrThrow();
      expect(row.erasure_id).toBe(erasure.id);
    } finally {
      await worker.stop();
    }
  });

  it("waits for a tenant's NDJSON upload begun before it, whatever its lines so far hold, and erases the subject's item once the run lands; another tenant's erasure does not wait behind it", async () => {
    const { request } = await import('node:http');
    const who = `uploading-${randomBytes(4).toString('hex')}`;
    // An upload begun before the erasure: one line written so far (of someone else), the subject's still to come.
    const upload = request(`${server.url}/v1/scoring/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/x-ndjson' },
    });
    const answered = new Promise<{ status: number; body: string }>((resolve, reject) => {
      upload.on('response', (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          body += chunk;
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      });
      upload.on('error', reject);
    });
    upload.write(`${JSON.stringify({ subject: 'someone-else', context: PLAIN })}\n`);
    const begun = async () =>
      (await storage()
        .db.selectFrom('runs')
        .select('id')
        .where('status', '=', 'uploading')
        .executeTakeFirst()) !== undefined;
    await expect.poll(begun, { timeout: 10_000 }).toBe(true);
    const accepted = await server.request('/v1/erasures', { key: alice, body: { subject: who } });
    const { id } = (await accepted.json()) as Erasure;
    const other = await server.request('/v1/erasures', { key: bob, body: { subject: 'bobs-subject' } });
    const { id: otherId } = (await other.json()) as Erasure;
    const worker = erasureWorker();
    // Alice's waits for the upload; Bob's, behind it, completes.
    expect(await worker.runOnce()).toBe(1);
    expect(await getErasure(id)).toMatchObject({ status: 'pending' });
    expect(
      (await (await server.request(`/v1/erasures/${otherId}`, { key: bob })).json()) as Erasure,
    ).toMatchObject({ status: 'completed' });
    // The subject's line comes after the erasure began; the upload ends and the run is scored.
    upload.end(`${JSON.stringify({ subject: who, context: PLAIN })}\n`);
    const { status, body } = await answered;
    expect(status).toBe(202);
    const runId = (JSON.parse(body) as Run).id;
    expect(await worker.runOnce()).toBe(0);
    const runWorker = testRunWorker(storage());
    runWorker.start();
    try {
      await waitForRunEnd(server, alice, runId);
    } finally {
      await runWorker.stop();
    }
    expect(await worker.runOnce()).toBe(1);
    expect(await getErasure(id)).toMatchObject({ status: 'completed', counts: { run_items: 1 } });
    const records = await server.request('/v1/subjects/records', { key: alice, body: { subject: who } });
    expect(((await records.json()) as SubjectRecordList).data).toEqual([]);
  });

  it('completes an erasure of a subject with no records, with zero counts', async () => {
    const accepted = await server.request('/v1/erasures', { key: alice, body: { subject: 'never-scored' } });
    const { id } = (await accepted.json()) as Erasure;
    expect(await erasureWorker().runOnce()).toBe(1);
    expect(await getErasure(id)).toMatchObject({
      status: 'completed',
      counts: {
        log_records: 0,
        run_items: 0,
        run_inputs: 0,
        events: 0,
        delivery_attempts: 0,
        idempotency_answers: 0,
      },
      log_cids: [],
    });
  });

  it("credits the erased records' bytes, and what erasing their events frees, back to the tenant's storage usage", async () => {
    const tenant = `carol-${kind}`;
    const { key: carol } = await testFeatures(storage()).keys.create(tenant);
    const hook = await server.request('/v1/webhooks/register', {
      key: carol,
      body: { url: 'http://127.0.0.1:9/hook', events: ['policy.escalated'] },
    });
    const webhookId = ((await hook.json()) as { id: string }).id;
    // An accented subject: its escalation's payload counts more bytes than characters.
    const credited = 'Åsa Öberg-Erasé';
    const cids = [
      await score(carol, credited, PLAIN),
      await score(carol, credited, PLAIN),
      await score(carol, credited, ESCALATED),
    ];
    await score(carol, 'kept', PLAIN);
    const records = await storage()
      .db.selectFrom('log_records')
      .select('bytes')
      .where('cid', 'in', cids)
      .execute();
    const recordBytes = records.reduce((sum, row) => sum + row.bytes.byteLength, 0);
    expect(recordBytes).toBeGreaterThan(0);
    const event = await storage()
      .db.selectFrom('events')
      .select(['id', 'type', 'payload', 'created_at'])
      .where('tenant_id', '=', tenant)
      .where('type', '=', 'policy.escalated')
      .executeTakeFirstOrThrow();
    // A receiver's answer stored for an attempt of its delivery.
    const deliveryId = newId('dlv');
    await storage()
      .db.insertInto('deliveries')
      .values({
        id: deliveryId,
        tenant_id: tenant,
        webhook_id: webhookId,
        event_id: event.id,
        event_type: event.type,
        status: 'failed',
        next_attempt_at: null,
        created_at: event.created_at,
        updated_at: event.created_at,
      })
      .execute();
    const answer = `réponse ${credited}`;
    await storage()
      .db.insertInto('delivery_attempts')
      .values({
        id: newId('att'),
        delivery_id: deliveryId,
        attempted_at: event.created_at,
        status_code: 500,
        duration_ms: 3,
        error: 'HTTP 500',
        response_body: answer,
        trigger: 'scheduled',
      })
      .execute();
    const before = await readTenantUsage(storage().db, tenant);
    expect((await server.request('/v1/erasures', { key: carol, body: { subject: credited } })).status).toBe(
      202,
    );
    expect(await erasureWorker().runOnce()).toBe(1);
    const erasedPayload = (
      await storage()
        .db.selectFrom('events')
        .select('payload')
        .where('id', '=', event.id)
        .executeTakeFirstOrThrow()
    ).payload;
    expect(erasedPayload).not.toContain('Åsa');
    const eventBytes = Buffer.byteLength(event.payload) - Buffer.byteLength(erasedPayload);
    // The erasure's own erasure-log/1 record is the operator's proof, not the tenant's data: not counted.
    expect(await readTenantUsage(storage().db, tenant)).toBe(
      before - recordBytes - eventBytes - Buffer.byteLength(answer),
    );
  });

  it("answers another tenant's erasure 404, and refuses an erased record's rewrite", async () => {
    const { id } = (await (
      await server.request('/v1/erasures', { key: alice, body: { subject: 'x' } })
    ).json()) as Erasure;
    expect((await server.request(`/v1/erasures/${id}`, { key: bob })).status).toBe(404);
    const cid = await score(alice, 'immutable', PLAIN);
    await expect(
      storage()
        .db.updateTable('log_records')
        .set({ bytes: new Uint8Array([1]) })
        .where('cid', '=', cid)
        .execute(),
    ).rejects.toThrow(/append-only/);
    await expect(storage().db.deleteFrom('log_records').where('cid', '=', cid).execute()).rejects.toThrow(
      /append-only/,
    );
  });
});

forEachDatabase('retention', ({ storage }) => {
  let server: TestServer;
  let carol: string;
  beforeAll(async () => {
    server = await startTestServer({ storage: storage() });
    ({ key: carol } = await testFeatures(storage()).keys.create('carol'));
  });
  afterAll(() => server.close());

  it('erases the records older than LOG_RETENTION by a retention erasure, logged like any erasure, and keeps younger ones', async () => {
    // Escalation events (which carry the subject) are written only for a tenant with a webhook taking them.
    const hook = await server.request('/v1/webhooks/register', {
      key: carol,
      body: { url: 'http://127.0.0.1:9/hook', events: ['policy.escalated'] },
    });
    expect(hook.status).toBe(201);
    const score = async (subject: string, context: object) => {
      const response = await server.request('/v1/scoring/score', { key: carol, body: { subject, context } });
      expect(response.status).toBe(200);
      return ((await response.json()) as ScoreResponse).log_cid;
    };
    const old = [
      await score('old-1', PLAIN),
      await score('old-2', ESCALATED),
      await score('old-1', { ...PLAIN, utilization: 0.3 }),
    ];
    await new Promise((resolve) => setTimeout(resolve, 10));
    const cutoff = new Date();
    await new Promise((resolve) => setTimeout(resolve, 10));
    const young = [await score('young-1', PLAIN), await score('old-1', { ...PLAIN, utilization: 0.4 })];
    await testSequencer(storage()).sequencer.sequenceOnce();

    // 48 hours on, with LOG_RETENTION=48h: the cutoff falls between the old and the young records.
    const later: Clock = { now: () => new Date(cutoff.getTime() + 48 * 60 * 60 * 1000) };
    const worker = () =>
      testErasureWorker(storage(), {
        clock: later,
        config: { retention: parseRetention('48h'), batchSize: 2 },
      });
    expect(await worker().runOnce()).toBe(1);
    const erasure = await storage()
      .db.selectFrom('erasures')
      .selectAll()
      .where('kind', '=', 'retention')
      .executeTakeFirstOrThrow();
    expect(erasure).toMatchObject({ status: 'completed', before: cutoff.toISOString() });
    const done = (await (
      await server.request(`/v1/erasures/${erasure.id}`, { key: carol })
    ).json()) as Erasure;
    expect(done).toMatchObject({ kind: 'retention', status: 'completed' });
    expect(done.counts.log_records).toBe(old.length);
    expect(done.counts.events).toBe(1); // the escalated old record's policy.escalated payload
    expect(done.log_cids).toEqual([...old].sort());
    for (const cid of old) {
      const response = await server.request(`/v1/logs/${cid}`, { key: carol });
      expect(response.status).toBe(410);
      expect(((await response.json()) as Problem).code).toBe('log_record_erased');
    }
    for (const cid of young)
      expect((await server.request(`/v1/logs/${cid}`, { key: carol })).status).toBe(200);

    // Logged the same way as a subject's erasure: an erasure-log/1 record, and subject.erased.
    const logged = await storage()
      .db.selectFrom('log_records')
      .select('bytes')
      .where('request_id', '=', erasure.id)
      .executeTakeFirstOrThrow();
    expect(JSON.parse(unpackRecord(logged.bytes).toString())).toMatchObject({
      schema: 'erasure-log/1',
      erasure_id: erasure.id,
      log_cids: done.log_cids,
    });
    const event = await storage()
      .db.selectFrom('events')
      .select('payload')
      .where('type', '=', 'subject.erased')
      .executeTakeFirstOrThrow();
    expect(JSON.parse(event.payload).data).toMatchObject({ erasure_id: erasure.id, kind: 'retention' });

    // Nothing newly expired: the next check accepts no erasure.
    const next = worker();
    expect(await next.runOnce()).toBe(0);
    const retentions = await storage()
      .db.selectFrom('erasures')
      .select('id')
      .where('kind', '=', 'retention')
      .execute();
    expect(retentions).toHaveLength(1);
  });
});

it('parses LOG_RETENTION durations with a unit', () => {
  expect(parseRetention('25mo')).toEqual({ count: 25, unit: 'mo' });
  expect(parseRetention('760d')).toEqual({ count: 760, unit: 'd' });
  expect(parseRetention('25')).toBeUndefined();
  expect(parseRetention('2w')).toBeUndefined();
});

it('reads ERASURE_BATCH_SIZE (500) and ERASURE_LEASE (60s), refusing values out of range', () => {
  expect(readErasureConfig(new EnvReader({}))).toMatchObject({ batchSize: 500, leaseMs: 60_000 });
  expect(readErasureConfig(new EnvReader({ ERASURE_BATCH_SIZE: '2', ERASURE_LEASE: '500ms' }))).toMatchObject(
    { batchSize: 2, leaseMs: 500 },
  );
  expect(() => loadConfig({ ERASURE_BATCH_SIZE: '0', ERASURE_LEASE: 'soon' })).toThrow(
    /ERASURE_BATCH_SIZE must be an integer from 1 to 10000[\s\S]*ERASURE_LEASE must be a duration/,
  );
});
