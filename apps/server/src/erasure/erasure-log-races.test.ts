import type { Erasure } from '@scenario-scoring/api-types';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { countingLogWrites, erasureLogsOf, logSubjectRecords } from '../../test/support/erasure-records.js';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';
import { OutboxSignal } from '../events/event-outbox.js';
import { type ErasureContext, processErasure } from './erasure-processor.js';
import { claimErasure, type ErasureRow } from './erasure-store.js';

/** Two erasure-log records' worth (1,000 + 203), so the `log` phase takes two transactions. */
const RECORDS = 1203;

/**
 * Two workers on one erasure (the first one's lease ran out while it was in a batch), and a record of the
 * subject stamped before the erasure began that commits while the erasure is being logged. Each scenario
 * drives processErasure by hand, one phase at a time, as two workers would.
 */
forEachDatabase('an erasure logged in several records, raced', ({ storage, kind }) => {
  let server: TestServer;
  let key: string;
  const tenant = `erasure-races-${kind}`;

  const logRecordsOf = (who: string, runId: string, n: number) =>
    logSubjectRecords(storage(), tenant, who, runId, n);
  const erasureLogs = (id: string) => erasureLogsOf(storage(), tenant, id);
  /** An erasure of `who` (after RECORDS records), a worker's context that counts erasure-log transactions. */
  const erasureOf = async (who: string) => {
    const erased = await logRecordsOf(who, `run_${who}`, RECORDS);
    const accepted = await server.request('/v1/erasures', { key, body: { subject: who } });
    const { id } = (await accepted.json()) as Erasure;
    const row = (): Promise<ErasureRow> =>
      storage().db.selectFrom('erasures').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    const counting = countingLogWrites(storage());
    const context: ErasureContext = {
      storage: counting.storage,
      subjectKey: testFeatures(storage()).subjectKey,
      outbox: new OutboxSignal(),
      now: () => new Date(),
      batchSize: 500,
    };
    /** Runs one phase's batch from the stored row, as a worker claiming it would. */
    const oneStep = async () => {
      let stepped = false;
      await processErasure(await row(), {
        ...context,
        stopping: () => {
          const stop = stepped;
          stepped = true;
          return stop;
        },
      });
    };
    return { id, erased, row, context, oneStep, logged: counting.logged };
  };
  /** The record's erasure and subject key. */
  const recordState = (cid: string) =>
    storage()
      .db.selectFrom('log_records')
      .select(['erasure_id', 'subject_key'])
      .where('tenant_id', '=', tenant)
      .where('cid', '=', cid)
      .executeTakeFirstOrThrow();

  beforeAll(async () => {
    server = await startTestServer({ storage: storage() });
    ({ key } = await testFeatures(storage()).keys.create(tenant));
  }, 60_000);
  afterAll(() => server.close());

  it('a worker whose lease ran out in an earlier phase cannot move the cursor back: no CID is logged twice', async () => {
    const e = await erasureOf(`rewind-${kind}`);
    for (let i = 0; i < 50 && (await e.row()).progress !== 'idempotency'; i++) await e.oneStep();
    const stale = await e.row();
    expect(stale.progress).toBe('idempotency');
    // Worker B (A's lease ran out) finishes the phase and logs the first record.
    await e.oneStep();
    expect((await e.row()).progress).toBe('log');
    expect(await processErasure(await e.row(), { ...e.context, stopping: () => e.logged() >= 1 })).toBe(
      'stopped',
    );
    const cursor = (await e.row()).progress;
    expect(cursor).toMatch(/^log:.*\|bafkrei/);
    // Worker A, which read the erasure in its idempotency phase, commits that batch now: it changes nothing.
    expect(await processErasure(stale, e.context)).toBe('waiting');
    expect((await e.row()).progress).toBe(cursor);
    // B goes on and completes it: each CID once, under one time.
    expect(await processErasure(await e.row(), e.context)).toBe('completed');
    const logs = await erasureLogs(e.id);
    const all = logs.flatMap((log) => log.log_cids).sort();
    expect(all).toEqual(e.erased);
    expect(new Set(logs.map((log) => log.erased_at)).size).toBe(1);
  }, 60_000);

  it('a worker whose claim another took over erases nothing more, even in a phase whose batch leaves the progress as it was', async () => {
    const e = await erasureOf(`claimed-${kind}`);
    const leaseMs = 60_000;
    const start = Date.now();
    // Worker A claims the erasure and reads it in its `records` phase (a full batch keeps `records`).
    for (let i = 0; i < 5 && (await e.row()).progress !== 'records'; i++) await e.oneStep();
    const a = await claimErasure(storage().db, 'worker-a', new Date(start), leaseMs);
    expect(a).toMatchObject({ id: e.id, progress: 'records', locked_by: 'worker-a' });
    // A stalls past its lease; worker B takes the erasure over.
    const b = await claimErasure(storage().db, 'worker-b', new Date(start + leaseMs + 1), leaseMs);
    expect(b).toMatchObject({ id: e.id, locked_by: 'worker-b' });
    // A's batch now erases nothing, counts nothing and lets go.
    const aContext = { ...e.context, lease: { workerId: 'worker-a', ms: leaseMs } };
    expect(await processErasure(a as ErasureRow, aContext)).toBe('waiting');
    expect(await e.row()).toMatchObject({ progress: 'records', log_records: 0, locked_by: 'worker-b' });
    const erasedSoFar = await storage()
      .db.selectFrom('log_records')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('tenant_id', '=', tenant)
      .where('erasure_id', '=', e.id)
      .executeTakeFirstOrThrow();
    expect(Number(erasedSoFar.n)).toBe(0);
    // B completes it, each CID logged once.
    const bContext = { ...e.context, lease: { workerId: 'worker-b', ms: leaseMs } };
    expect(await processErasure(b as ErasureRow, bContext)).toBe('completed');
    expect(await e.row()).toMatchObject({ status: 'completed', log_records: RECORDS });
    expect((await erasureLogs(e.id)).flatMap((log) => log.log_cids).sort()).toEqual(e.erased);
  }, 60_000);

  it('a record of the subject stamped before the erasure and committed after its first erasure-log record is erased all the same', async () => {
    const who = `late-${kind}`;
    const e = await erasureOf(who);
    expect(await processErasure(await e.row(), { ...e.context, stopping: () => e.logged() >= 1 })).toBe(
      'stopped',
    );
    const [late] = await logRecordsOf(who, 'run_late', 1);
    // The completing statement finds it and sends the erasure back for it; the erasure completes after.
    expect(await processErasure(await e.row(), e.context)).toBe('completed');
    expect(await recordState(late as string)).toMatchObject({ erasure_id: e.id, subject_key: null });
    const done = await e.row();
    expect(done).toMatchObject({ status: 'completed', log_records: RECORDS + 1 });
    // The last pass logged every CID under the erasure's time; the first pass's record stays, earlier.
    const logs = await erasureLogs(e.id);
    const last = logs.filter((log) => log.erased_at === done.erased_at);
    expect(last.flatMap((log) => log.log_cids).sort()).toEqual([...e.erased, late].sort());
    expect(logs.filter((log) => log.erased_at !== done.erased_at).map((log) => log.log_cids.length)).toEqual([
      1000,
    ]);
  }, 60_000);

  it('a worker still at the start of the log phase that finds a late record does not move the erasure back under the worker that took it over', async () => {
    const who = `stale-${kind}`;
    const e = await erasureOf(who);
    for (let i = 0; i < 50 && (await e.row()).progress !== 'log'; i++) await e.oneStep();
    const stale = await e.row();
    expect(stale.progress).toBe('log');
    // Worker B logs the first record.
    expect(await processErasure(stale, { ...e.context, stopping: () => e.logged() >= 1 })).toBe('stopped');
    const cursor = (await e.row()).progress;
    const [late] = await logRecordsOf(who, 'run_late2', 1);
    // Worker A, still holding `log`, finds the late record: it lets go, changing nothing.
    expect(await processErasure(stale, e.context)).toBe('waiting');
    expect((await e.row()).progress).toBe(cursor);
    // B completes the erasure, the late record erased.
    expect(await processErasure(await e.row(), e.context)).toBe('completed');
    expect(await recordState(late as string)).toMatchObject({ erasure_id: e.id, subject_key: null });
  }, 60_000);
});
