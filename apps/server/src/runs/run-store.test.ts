import type { ScoreRequest } from '@scenario-scoring/api-types';
import { CompiledQuery } from 'kysely';
import { expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { problem } from '../errors/problem.js';
import { newEvent } from '../events/event-outbox.js';
import { newId } from '../ids.js';
import type { Storage } from '../storage/storage.js';
import { scoreBatch } from './run-batch.js';
import { type ClaimedRun, claimOf, createRunStore, insertRun, type RunShare } from './run-store.js';

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

  it('when one tenant queued many runs before another queued one, then a claim gives the other a slot first, and tenants take turns even with one slot', async () => {
    // Leases of the earlier tests run past T0: only this test's runs are free at T0.
    const hog = await Promise.all([0, 1, 2, 3].map(() => queueRun('hog')));
    const [late] = [await queueRun('late')];
    const later = [await queueRun('later'), await queueRun('later')];
    const store = createRunStore(storage());
    const ids = (runs: ClaimedRun[]) => runs.map((run) => run.id);

    // Each tenant's oldest first, the oldest of those first.
    expect(ids(await store.claim(INSTANCE, T0, LEASE_MS, 2))).toEqual([hog[0], late]);
    // The worker holds one of hog's and one of late's: later's first ranks before hog's second, which
    // ties with later's second and is older.
    const held = new Map([
      ['hog', 1],
      ['late', 1],
    ]);
    expect(ids(await store.claim(INSTANCE, T0, LEASE_MS, 2, { held }))).toEqual([later[0], hog[1]]);
    // Nothing held (one slot, whose runs ended): equal ranks go to the tenant served least recently, then
    // the oldest run.
    const other = await queueRun('other');
    const oneSlot = (share: RunShare) => store.claim(INSTANCE, T0, LEASE_MS, 1, share).then(ids);
    const sequence = [
      // hog's next (hog2) against later's next (later1) and other's: hog was served least recently.
      { served: { other: 3, hog: 2, later: 5 }, takes: hog[2] },
      { served: { hog: 6, other: 3, later: 5 }, takes: other },
      // other has no free run left.
      { served: { hog: 6, later: 5 }, takes: later[1] },
    ];
    for (const { served, takes } of sequence)
      expect(await oneSlot({ lastServed: new Map(Object.entries(served)) })).toEqual([takes]);
  });

  it('when a claim looks for free runs, then it probes runs_tenant_unfinished_idx per tenant and reads no run but those it takes (SQLite plan)', async () => {
    if (storage().kind !== 'sqlite') return;
    const statements: CompiledQuery[] = [];
    const recording = {
      ...storage(),
      transact: (steps: Parameters<Storage['transact']>[0], options?: Parameters<Storage['transact']>[1]) => {
        for (const step of steps) statements.push('statement' in step ? step.statement : step);
        return storage().transact(steps, options);
      },
    };
    await createRunStore(recording).claim(INSTANCE, T0, LEASE_MS, 4, { held: new Map([['hog', 1]]) });
    const [claim] = statements as [CompiledQuery];
    const plan = await db().executeQuery<{ detail: string }>(
      CompiledQuery.raw(`explain query plan ${claim.sql}`, [...claim.parameters]),
    );
    const details = plan.rows.map((row) => row.detail);
    // No scan of runs (aliased u, x, c): the tenants and each one's free runs are probes of the index,
    // which covers them (no run's row is read), and the chosen runs are found by key.
    expect(details.filter((detail) => /^SCAN (runs|u|x|c)\b/.test(detail))).toEqual([]);
    expect(details.filter((detail) => detail.includes('runs_tenant_unfinished_idx'))).toEqual([
      'SEARCH u USING COVERING INDEX runs_tenant_unfinished_idx',
      'SEARCH u USING COVERING INDEX runs_tenant_unfinished_idx (tenant_id>?)',
      'SEARCH x USING COVERING INDEX runs_tenant_unfinished_idx (tenant_id=?)',
    ]);
  });
});
