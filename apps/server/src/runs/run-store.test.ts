import type { ScoreRequest } from '@scenario-scoring/api-types';
import { expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { problem } from '../errors/problem.js';
import { newEvent } from '../events/event-outbox.js';
import { newId } from '../ids.js';
import { scoreBatch } from './run-batch.js';
import { type ClaimedRun, claimOf, createRunStore, insertRun } from './run-store.js';

const T0 = new Date('2026-11-22T10:00:00.000Z');
const LEASE_MS = 1000;
/** Every slot of an instance claims under the instance's worker id. */
const INSTANCE = 'wrk_instance';

const items: ScoreRequest[] = Array.from({ length: 3 }, (_, i) => ({
  subject: `store-${i}`,
  context: { jurisdiction: 'DE', on_time_ratio: 0.9, utilization: i / 10 },
}));

forEachDatabase('the run store', ({ storage }) => {
  const db = () => storage().db;

  async function queueRun(tenantId: string) {
    const id = newId('run');
    await db()
      .transaction()
      .execute((trx) => insertRun(trx, { id, tenantId, items, now: T0, deadlineAt: null }));
    return id;
  }
  const runRow = (id: string) =>
    db().selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const after = (ms: number) => new Date(T0.getTime() + ms);
  const claimed = ([run, ...more]: ClaimedRun[]) => {
    if (!run || more.length > 0) throw new Error(`claimed ${more.length + (run ? 1 : 0)} runs, not 1`);
    return run;
  };

  it('when a slot’s lease expired and another slot of the same instance claimed the run, then the stale slot can neither release, fail nor commit it', async () => {
    const tenant = 'stale-slot';
    const id = await queueRun(tenant);
    const store = createRunStore(storage());
    const stale = claimed(await store.claim(INSTANCE, T0, LEASE_MS));
    const live = claimed(await store.claim(INSTANCE, after(2 * LEASE_MS), LEASE_MS));
    expect([stale.id, live.id, stale.claims, live.claims]).toEqual([id, id, 1, 2]);

    const staleClaim = claimOf(stale, INSTANCE);
    await store.release(staleClaim);
    const now = after(2 * LEASE_MS);
    const error = problem('internal_error', { detail: 'The stale slot gives up.' });
    const counts = { succeeded: 0, failed: 0, escalated: 0 };
    const data = {
      run_id: id,
      status: 'failed' as const,
      item_count: 3,
      counts,
      completed_at: now.toISOString(),
      error,
    };
    const failure = { ...staleClaim, error, event: newEvent(tenant, 'run.failed', data, now), now };
    expect(await store.fail(failure)).toBe(false);
    const batch = scoreBatch({ runId: id, tenantId: tenant, items: items.slice(0, 1) }, 0, now);
    const commit = { ...staleClaim, fromIndex: 0, ...batch, now, leaseMs: LEASE_MS, completes: false };
    expect(await store.commitBatch(commit)).toBe(false);

    expect(await runRow(id)).toMatchObject({
      status: 'running',
      next_index: 0,
      locked_by: INSTANCE,
      locked_until: after(3 * LEASE_MS).toISOString(),
      claims: 2,
    });
    // The live slot's claim still holds.
    expect(await store.commitBatch({ ...commit, ...claimOf(live, INSTANCE) })).toBe(true);
  });

  it('when a claim is released, then it does not count: the next claim has the same count', async () => {
    const id = await queueRun('released');
    const store = createRunStore(storage());
    const first = claimed(await store.claim(INSTANCE, T0, LEASE_MS));
    await store.release(claimOf(first, INSTANCE));
    expect(await runRow(id)).toMatchObject({ status: 'running', locked_by: null, claims: 0 });

    const second = claimed(await store.claim('wrk_other', T0, LEASE_MS));
    expect([second.id, first.claims, second.claims]).toEqual([id, 1, 1]);
  });

  it('when several slots are free, then one claim takes up to that many runs, the oldest first, and leaves the rest', async () => {
    const ids = [await queueRun('many'), await queueRun('many'), await queueRun('many')];
    const store = createRunStore(storage());
    const first = await store.claim(INSTANCE, T0, LEASE_MS, 2);
    expect(first.map((run) => [run.id, run.items.length, run.nextIndex, run.claims])).toEqual([
      [ids[0], 3, 0, 1],
      [ids[1], 3, 0, 1],
    ]);
    const rest = await store.claim(INSTANCE, T0, LEASE_MS, 5);
    expect(rest.map((run) => run.id)).toEqual([ids[2]]);
    expect(await store.claim(INSTANCE, T0, LEASE_MS, 5)).toEqual([]);
    for (const id of ids) expect(await runRow(id)).toMatchObject({ status: 'running', locked_by: INSTANCE });
  });
});
