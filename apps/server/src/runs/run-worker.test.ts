import { randomBytes } from 'node:crypto';
import type { Problem, RunCompletedEvent, RunFailedEvent, ScoreRequest } from '@scenario-scoring/api-types';
import { waitUntil } from '@scenario-scoring/testkit';
import { expect, it } from 'vitest';
import { signAndReleaseRuns } from '../../test/support/log-fixtures.js';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { failingCommits, heldCommit, testRunWorker } from '../../test/support/test-run-worker.js';
import { createTestWebhook } from '../../test/support/test-webhooks.js';
import type { Clock } from '../common/clock.js';
import { newId } from '../common/ids.js';
import { OutboxSignal } from '../events/event-outbox.js';
import { SecretBox } from '../webhooks/outbound/secret-box.js';
import type { RunOutcome } from './run-processor.js';
import { createRunStore, insertRun, type RunStore } from './run-store.js';

const T0 = new Date('2026-11-22T10:00:00.000Z');

/** A clock the test moves by hand. */
function manualClock(start: Date): Clock & { set(date: Date): void } {
  let now = start;
  return { now: () => now, set: (date) => (now = date) };
}

const items = (count: number, prefix: string): ScoreRequest[] =>
  Array.from({ length: count }, (_, i) => ({
    subject: `${prefix}-${i}`,
    context: { jurisdiction: 'DE', on_time_ratio: 0.9, utilization: (i % 10) / 10 },
  }));

forEachDatabase('the run worker', ({ storage }) => {
  const db = () => storage().db;

  async function queueRun(tenantId: string, count: number, deadlineAt: Date | null = null, now = T0) {
    const id = newId('run');
    await db()
      .transaction()
      .execute((trx) => insertRun(trx, { id, tenantId, items: items(count, id), now, deadlineAt }));
    return id;
  }
  const runRow = (id: string) =>
    db().selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const runEvents = async (tenantId: string, type: string) => {
    const rows = await db()
      .selectFrom('events')
      .select('payload')
      .where('tenant_id', '=', tenantId)
      .where('type', '=', type)
      .execute();
    return rows.map((row) => JSON.parse(row.payload));
  };
  const count = async (table: 'run_items' | 'log_records', column: 'run_id' | 'request_id', id: string) => {
    const row = await db()
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where(column, '=', id)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  };
  const ended = async (id: string) => ['completed', 'failed'].includes((await runRow(id)).status);

  it('when a run was interrupted more often than RUN_MAX_CLAIMS allows, then it ends failed with internal_error and run.failed', async () => {
    const tenant = 'interrupted';
    const id = await queueRun(tenant, 3);
    // As if three instances had each died while processing it.
    await db().updateTable('runs').set({ claims: 3 }).where('id', '=', id).execute();
    const worker = testRunWorker(storage(), { config: { maxClaims: 3 } });
    worker.start();
    await waitUntil(() => ended(id), 15_000);
    await worker.stop();

    const run = await runRow(id);
    expect(run).toMatchObject({ status: 'failed', next_index: 0, claims: 4, locked_by: null });
    expect(JSON.parse(run.error ?? 'null')).toMatchObject({
      code: 'internal_error',
      detail:
        'The run was interrupted 3 times without finishing (its server died or lost its lease while processing it); 0 of 3 items were attempted.',
    });
    expect(await runEvents(tenant, 'run.failed')).toHaveLength(1);
    expect(await count('run_items', 'run_id', id)).toBe(0);
  });

  it('when a run’s deadline has passed, then it ends failed with run_deadline_exceeded and one run.failed event', async () => {
    const clock = manualClock(T0);
    const tenant = 'deadline';
    // Once the first batch commits, time jumps past the deadline, so the second batch is never scored.
    const store = createRunStore(storage());
    const jumping: RunStore = {
      ...store,
      async commitBatch(batch) {
        const done = await store.commitBatch(batch);
        clock.set(new Date(T0.getTime() + 61_000));
        return done;
      },
    };
    const id = await queueRun(tenant, 3, new Date(T0.getTime() + 60_000));
    const worker = testRunWorker(storage(), { store: jumping, clock, config: { batchSize: 1 } });
    worker.start();
    await waitUntil(() => ended(id), 15_000);
    await worker.stop();

    const run = await runRow(id);
    const error = JSON.parse(run.error ?? 'null') as Problem;
    expect(run).toMatchObject({ status: 'failed', next_index: 1, succeeded: 1, locked_by: null });
    expect(run.completed_at).toBe('2026-11-22T10:01:01.000Z');
    expect(error).toMatchObject({ code: 'run_deadline_exceeded', status: 504 });
    expect(error.detail).toBe(
      'The run did not complete within its deadline of 60 seconds; 1 of 3 items were attempted.',
    );
    const events = (await runEvents(tenant, 'run.failed')) as RunFailedEvent[];
    expect(events).toHaveLength(1);
    expect(events[0]?.data).toEqual({
      run_id: id,
      status: 'failed',
      item_count: 3,
      counts: { succeeded: 1, failed: 0, escalated: 0 },
      completed_at: '2026-11-22T10:01:01.000Z',
      error,
    });
    expect(await runEvents(tenant, 'run.completed')).toEqual([]);
  });

  it('when batch commits keep failing past the retries, then the run ends failed with storage_unavailable', async () => {
    const tenant = 'storage-down';
    const { store, state } = failingCommits(createRunStore(storage()));
    const id = await queueRun(tenant, 5);
    const worker = testRunWorker(storage(), { store, config: { storageRetries: 2 } });
    worker.start();
    await waitUntil(() => ended(id), 15_000);
    await worker.stop();

    const run = await runRow(id);
    expect(state.attempts).toBe(3);
    expect(run).toMatchObject({ status: 'failed', next_index: 0, succeeded: 0 });
    expect(JSON.parse(run.error ?? 'null')).toMatchObject({ code: 'storage_unavailable', status: 503 });
    expect(await count('run_items', 'run_id', id)).toBe(0);
    expect(await runEvents(tenant, 'run.failed')).toHaveLength(1);
  });

  /** SQLite's error when another connection kept the write lock through the wait (SQLITE_BUSY). */
  const databaseBusy = () =>
    Object.assign(new Error('database is locked'), { code: 'ERR_SQLITE_ERROR', errcode: 5 });

  it('when the database is busy (another writer holds its lock) past the retries, then the run waits up to 30 s of backoff for it, and completes', async () => {
    const tenant = 'storage-busy-briefly';
    // 8 refusals: 100 + 200 + … + 3,200 + 5,000 + 5,000 ms of backoff (16.3 s), past storageRetries (2).
    const { store, state } = failingCommits(createRunStore(storage()), 8, databaseBusy);
    const id = await queueRun(tenant, 5);
    const slept: number[] = [];
    const worker = testRunWorker(storage(), {
      store,
      config: { storageRetries: 2, storageRetryBackoffMs: 100 },
      sleep: async (ms) => {
        slept.push(ms);
      },
    });
    worker.start();
    await waitUntil(() => ended(id), 15_000);
    await worker.stop();

    expect(state.attempts).toBe(9);
    expect(slept.slice(0, 8)).toEqual([100, 200, 400, 800, 1600, 3200, 5000, 5000]);
    expect(await runRow(id)).toMatchObject({ status: 'completed', next_index: 5, succeeded: 5 });
    expect(await count('run_items', 'run_id', id)).toBe(5);
  });

  it('when the database stays busy through 30 s of backoff, then the run ends failed with storage_unavailable saying so', async () => {
    const tenant = 'storage-busy-long';
    const { store, state } = failingCommits(
      createRunStore(storage()),
      Number.POSITIVE_INFINITY,
      databaseBusy,
    );
    const id = await queueRun(tenant, 5);
    const worker = testRunWorker(storage(), {
      store,
      config: { storageRetries: 2, storageRetryBackoffMs: 100 },
    });
    worker.start();
    await waitUntil(() => ended(id), 15_000);
    await worker.stop();

    // Backoff 100 … 3,200, then 5,000 each: past 30 s after the 11th retry.
    expect(state.attempts).toBe(12);
    const run = await runRow(id);
    expect(run).toMatchObject({ status: 'failed', next_index: 0, succeeded: 0 });
    const error = JSON.parse(run.error ?? 'null') as Problem;
    expect(error).toMatchObject({ code: 'storage_unavailable', status: 503 });
    expect(error.detail).toMatch(
      /^The database stayed busy \(another writer held it\) through 30 s of retries; 0 of 5 items/,
    );
  });

  it('when batch commits fail fewer times than the retries, then the run completes with every item once', async () => {
    const tenant = 'storage-flaky';
    const { store, state } = failingCommits(createRunStore(storage()), 2);
    const id = await queueRun(tenant, 5);
    const worker = testRunWorker(storage(), { store, config: { storageRetries: 3, batchSize: 2 } });
    worker.start();
    await waitUntil(() => ended(id), 15_000);
    await worker.stop();

    expect(state.attempts).toBe(5);
    expect(await runRow(id)).toMatchObject({ status: 'completed', next_index: 5, succeeded: 5 });
    expect(await count('run_items', 'run_id', id)).toBe(5);
    expect(await runEvents(tenant, 'run.completed')).toEqual([]);
    await signAndReleaseRuns(storage());
    expect(await runEvents(tenant, 'run.completed')).toHaveLength(1);
  });

  it('when a worker dies mid-run, then another resumes after its lease from the last committed batch, and the dead one’s late commit is refused', async () => {
    const tenant = 'crash';
    // Worker A commits two batches, then hangs in its third commit as if its process had frozen.
    const { store: freezing, state, release } = heldCommit(createRunStore(storage()), 3);
    const outcomes: Record<string, RunOutcome> = {};
    const id = await queueRun(tenant, 50);
    // Escalation events are written only for a tenant with a webhook taking them.
    await createTestWebhook(storage(), new SecretBox(randomBytes(32)), {
      tenantId: tenant,
      url: 'https://example.com/hook',
      events: ['policy.escalated'],
    });
    const a = testRunWorker(storage(), {
      store: freezing,
      workerId: 'wrk_a',
      config: { batchSize: 10 },
      onRunEnded: (_run, outcome) => (outcomes.a = outcome),
    });
    a.start();
    await waitUntil(async () => (await runRow(id)).next_index === 20 && state.commits === 3, 15_000);

    // Worker B sees A's lease as expired, claims the run and finishes it from item 20.
    const later: Clock = { now: () => new Date(Date.now() + 60_000) };
    const b = testRunWorker(storage(), {
      workerId: 'wrk_b',
      clock: later,
      config: { batchSize: 10 },
      onRunEnded: (_run, outcome) => (outcomes.b = outcome),
    });
    b.start();
    await waitUntil(() => ended(id), 15_000);
    release();
    await waitUntil(async () => outcomes.a !== undefined, 15_000);
    await Promise.all([a.stop(), b.stop()]);

    expect(outcomes).toEqual({ a: 'lost', b: 'completed' });
    const run = await runRow(id);
    expect(run).toMatchObject({ status: 'completed', next_index: 50, succeeded: 50, claims: 2 });
    expect(await count('run_items', 'run_id', id)).toBe(50);
    expect(await count('log_records', 'request_id', id)).toBe(50);
    await signAndReleaseRuns(storage());
    const completed = (await runEvents(tenant, 'run.completed')) as RunCompletedEvent[];
    const escalated = (await runEvents(tenant, 'policy.escalated')).length;
    expect(completed.map((e) => e.data.counts)).toEqual([{ succeeded: 50, failed: 0, escalated }]);
    expect(run.escalated).toBe(escalated);
  });

  it('when a worker stops mid-run, then it releases its claim and another worker completes the run', async () => {
    const tenant = 'stopping';
    const { store: gated, state, release } = heldCommit(createRunStore(storage()), 2);
    const id = await queueRun(tenant, 30);
    const a = testRunWorker(storage(), { store: gated, config: { batchSize: 10 } });
    a.start();
    await waitUntil(async () => state.commits === 2, 15_000);
    const stopped = a.stop();
    release();
    await stopped;
    expect(await runRow(id)).toMatchObject({ status: 'running', next_index: 20, locked_by: null });

    const b = testRunWorker(storage(), { config: { batchSize: 10 } });
    b.start();
    await waitUntil(() => ended(id), 15_000);
    await b.stop();
    // The stop gave its claim back: only b's claim counts.
    expect(await runRow(id)).toMatchObject({ status: 'completed', next_index: 30, claims: 1 });
    expect(await count('run_items', 'run_id', id)).toBe(30);
  });

  it('when a run’s workers are stopped mid-run more often than RUN_MAX_CLAIMS, then the stops do not count and the run completes', async () => {
    const tenant = 'restarts';
    const store = createRunStore(storage());
    const id = await queueRun(tenant, 50);
    const config = { batchSize: 10, maxClaims: 1 };
    // Two instances in turn are stopped while their second batch commits, 20 items each.
    for (const workerId of ['wrk_first', 'wrk_second']) {
      const { store: gated, state, release } = heldCommit(store, 2);
      const worker = testRunWorker(storage(), { store: gated, workerId, config });
      worker.start();
      await waitUntil(async () => state.commits === 2, 15_000);
      const stopped = worker.stop();
      release();
      await stopped;
    }
    expect(await runRow(id)).toMatchObject({ status: 'running', next_index: 40, locked_by: null, claims: 0 });

    const last = testRunWorker(storage(), { config });
    last.start();
    await waitUntil(() => ended(id), 15_000);
    await last.stop();
    expect(await runRow(id)).toMatchObject({ status: 'completed', next_index: 50, succeeded: 50, claims: 1 });
    expect(await runEvents(tenant, 'run.failed')).toEqual([]);
  });

  it('when one tenant queued runs before another’s, then with one slot the other’s run goes second, not after the whole backlog', async () => {
    const hog: string[] = [];
    for (let n = 0; n < 4; n++) hog.push(await queueRun('backlog', 3));
    const polite = await queueRun('polite', 3);
    const order: string[] = [];
    const worker = testRunWorker(storage(), {
      config: { concurrency: 1 },
      onRunEnded: (runId) => order.push(runId),
    });
    worker.start();
    await waitUntil(async () => (await Promise.all([...hog, polite].map(ended))).every(Boolean), 15_000);
    await worker.stop();
    expect(order).toEqual([hog[0], polite, hog[1], hog[2], hog[3]]);
  });

  it('when one tenant submits runs one after another to a running worker, then every run completes without waiting for a lease to end', async () => {
    // As the API does: each run created wakes the worker, so each claim is made while the worker holds
    // the tenant's earlier runs (with one slot left of three, its next run ranks at 3).
    const runQueue = new OutboxSignal();
    // A lease far longer than the wait: a run leased but not processed would not complete in time.
    const worker = testRunWorker(storage(), { runQueue, config: { concurrency: 3, leaseMs: 600_000 } });
    worker.start();
    const runs = await Promise.all(
      [0, 1, 2, 3, 4, 5, 6].map(async () => {
        const id = await queueRun('one-after-another', 300);
        runQueue.notify();
        return id;
      }),
    );
    await waitUntil(async () => (await Promise.all(runs.map(ended))).every(Boolean), 10_000);
    await worker.stop();
    for (const id of runs) expect(await runRow(id)).toMatchObject({ status: 'completed', claims: 1 });
  });
});
