import type { ScoreRequest } from '@scenario-scoring/api-types';
import { CompiledQuery, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { newId } from '../common/ids.js';
import { problem } from '../errors/problem.js';
import { newEvent } from '../events/event-outbox.js';
import { scoreBatch } from './run-batch.js';
import { claimStatement } from './run-claims.js';
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

  it('when one tenant queued many runs before another queued one, then a claim gives the other a slot first, and tenants take turns even with one slot', async () => {
    // Leases of the earlier tests run past T0: only this test's runs are free at T0. Tenants in id
    // order: hog, late, later, many, other, released, stale-slot.
    const hog = await Promise.all([0, 1, 2, 3].map(() => queueRun('hog')));
    const [late] = [await queueRun('late')];
    const later = [await queueRun('later'), await queueRun('later')];
    const store = createRunStore(storage());
    const ids = (runs: ClaimedRun[]) => runs.map((run) => run.id);

    // Each tenant's oldest first, tenants in turn.
    expect(ids(await store.claim(INSTANCE, T0, LEASE_MS, 2))).toEqual([hog[0], late]);
    // The worker holds one of hog's and one of late's: later's first ranks before hog's second, which
    // ties with later's second and comes first in the turn.
    const held = new Map([
      ['hog', 1],
      ['late', 1],
    ]);
    expect(ids(await store.claim(INSTANCE, T0, LEASE_MS, 2, { held }))).toEqual([later[0], hog[1]]);
    // One slot, nothing held: the tenants after the one last served, in turn, wrapping around.
    const other = await queueRun('other');
    const oneSlot = (after: string) => store.claim(INSTANCE, T0, LEASE_MS, 1, { after }).then(ids);
    expect(await oneSlot('hog')).toEqual([later[1]]);
    expect(await oneSlot('later')).toEqual([other]);
    expect(await oneSlot('other')).toEqual([hog[2]]);
    expect(await oneSlot('hog')).toEqual([hog[3]]);
    expect(await oneSlot('hog')).toEqual([]);
  });

  it('when the worker already holds runs of the only tenant with free ones, then a claim returns every run it leased (none leased and left unprocessed until the lease ends)', async () => {
    const runs = await Promise.all([0, 1, 2, 3].map(() => queueRun('holds-two')));
    const store = createRunStore(storage());
    // The worker holds two of the tenant's runs: the next two rank 3 and 4, past the claim's two slots.
    const held = new Map([['holds-two', 2]]);
    const claimedIds = (await store.claim('wrk_holds', T0, LEASE_MS, 2, { held })).map((run) => run.id);
    const leased = await db().selectFrom('runs').select('id').where('locked_by', '=', 'wrk_holds').execute();
    expect(claimedIds).toHaveLength(2);
    expect([...claimedIds].sort()).toEqual(leased.map((row) => row.id).sort());
    expect(runs).toEqual(expect.arrayContaining(claimedIds));
  });

  it('when a rival holds one of the runs a claim chooses, then the claim takes the others (PostgreSQL: it looks again past the locked one)', async () => {
    const runs = [await queueRun('raced'), await queueRun('raced'), await queueRun('raced')];
    const store = createRunStore(storage());
    const at = after(10 * LEASE_MS);
    // Earlier tests' runs are free again by then: hold them, so that only these three are.
    const rest = await store.claim('wrk_rest', at, 100 * LEASE_MS, 64);
    expect(rest.map((run) => run.id)).toEqual(expect.arrayContaining(runs));
    for (const run of rest) if (runs.includes(run.id)) await store.release(claimOf(run, 'wrk_rest'));
    const [oldest, ...others] = runs as [string, string, string];
    if (storage().kind === 'postgres') {
      // A rival's transaction has locked the oldest (as a rival instance's claim does while it commits).
      const claimed = await db()
        .transaction()
        .execute(async (trx) => {
          await sql`select id from runs where id = ${oldest} for update`.execute(trx);
          return store.claim(INSTANCE, at, LEASE_MS, 2);
        });
      expect(claimed.map((run) => run.id)).toEqual(others);
    } else {
      // SQLite has one writer: a rival's lease is there before the claim or after it.
      await db()
        .updateTable('runs')
        .set({ locked_by: 'wrk_rival', locked_until: after(100 * LEASE_MS).toISOString() })
        .where('id', '=', oldest)
        .execute();
      expect((await store.claim(INSTANCE, at, LEASE_MS, 2)).map((run) => run.id)).toEqual(others);
    }
  });

  it('when the tenants next in turn have only held runs, then a claim passes over them to a free one', async () => {
    const busy = [];
    for (let n = 0; n < 24; n++) busy.push(await queueRun(`busy-${String(n).padStart(2, '0')}`));
    const store = createRunStore(storage());
    // Another instance holds them all, and whatever else is free at T0.
    const taken = await store.claim('wrk_other', T0, LEASE_MS, 64);
    expect(taken.map((run) => run.id)).toEqual(expect.arrayContaining(busy));
    const free = await queueRun('zz-free');
    expect((await store.claim(INSTANCE, T0, LEASE_MS, 1)).map((run) => run.id)).toEqual([free]);
  });

  describe("the claim's search for free runs", () => {
    /** Many tenants with a run each, and runs of the earlier tests: the plan's cost must not grow with them. */
    it("is index probes of runs_tenant_unfinished_idx that read no run but those it takes (the SQLite plan, and PostgreSQL's with statistics from before the tenants came)", async () => {
      // PostgreSQL's statistics from before the tenants came (a database that grew since its last
      // ANALYZE): the planner then believes few tenants hold all the runs, and few runs are unfinished.
      if (storage().kind === 'postgres') {
        for (let n = 0; n < 200; n++) await queueRun('plan-one');
        await db()
          .updateTable('runs')
          .set({ status: 'completed' })
          .where('tenant_id', '=', 'plan-one')
          .execute();
        await sql`analyze runs`.execute(db());
      }
      for (let n = 0; n < 200; n++) await queueRun(`plan-${String(n).padStart(3, '0')}`);
      const query = claimStatement(storage(), {
        workerId: INSTANCE,
        now: T0,
        leaseMs: LEASE_MS,
        limit: 4,
        share: { after: 'plan-100', held: new Map([['plan-050', 2]]) },
      });
      if (storage().kind === 'sqlite') {
        const plan = await db().executeQuery<{ detail: string }>(
          CompiledQuery.raw(`explain query plan ${query.sql}`, [...query.parameters]),
        );
        const details = plan.rows.map((row) => row.detail);
        // No scan of runs (aliased u, x, c): tenants and their free runs are probes of the index, which
        // covers them, and each candidate is found by key.
        expect(details.filter((detail) => /^SCAN (runs|u|x|c)\b/.test(detail))).toEqual([]);
        expect(details.filter((detail) => detail.includes('runs'))).toEqual(
          expect.arrayContaining([
            'SEARCH u USING COVERING INDEX runs_tenant_unfinished_idx (tenant_id>?)',
            'SEARCH x USING COVERING INDEX runs_tenant_unfinished_idx (tenant_id=?)',
          ]),
        );
      } else {
        const plan = await db().executeQuery<{ 'QUERY PLAN': string }>(
          CompiledQuery.raw(`explain ${query.sql}`, [...query.parameters]),
        );
        const lines = plan.rows.map((row) => row['QUERY PLAN']);
        // The walk (u) and each tenant's free runs (x) read the index; the chosen are locked by key (k).
        const reads = (alias: string) =>
          lines.filter((line) => new RegExp(` on runs ${alias}(_\\d+)?\\b`).test(line));
        expect(reads('u').length).toBeGreaterThan(0);
        expect(reads('x').length).toBeGreaterThan(0);
        for (const line of [...reads('u'), ...reads('x')])
          expect(line).toContain('runs_tenant_unfinished_idx');
        expect(lines.filter((line) => line.includes('Seq Scan on runs'))).toEqual([]);
      }
    });
  });
});
