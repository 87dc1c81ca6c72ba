import { randomBytes } from 'node:crypto';
import type { ScoreRequest } from '@scenario-scoring/api-types';
import { sql } from 'kysely';
import { expect, it } from 'vitest';
import { testRecord } from '../../test/support/log-fixtures.js';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { createTestWebhook } from '../../test/support/test-webhooks.js';
import { newId } from '../common/ids.js';
import { insertLogRecords } from '../score-log/score-log-store.js';
import { SecretBox } from '../webhooks/outbound/secret-box.js';
import { scoreBatch } from './run-batch.js';
import { RunBatchCommitter } from './run-batch-committer.js';
import { type BatchCommit, insertRun } from './run-store.js';

const NOW = new Date('2026-11-22T10:00:00.000Z');
const WORKER = 'wrk_group';

const items = (count: number, prefix: string): ScoreRequest[] =>
  Array.from({ length: count }, (_, i) => ({
    subject: `${prefix}-${i}`,
    context: { jurisdiction: 'DE', on_time_ratio: 0.9, utilization: (i % 10) / 10 },
  }));

forEachDatabase('the run batch committer', ({ storage, kind }) => {
  const db = () => storage().db;

  /** A run of `count` items (each with `context` when given), already claimed by WORKER. */
  async function claimedRun(tenantId: string, count: number, context?: ScoreRequest['context']) {
    const id = newId('run');
    const runItems = items(count, id).map((item) => (context ? { ...item, context } : item));
    await db()
      .transaction()
      .execute((trx) => insertRun(trx, { id, tenantId, items: runItems, now: NOW, deadlineAt: null }));
    await db()
      .updateTable('runs')
      .set({ status: 'running', locked_by: WORKER, locked_until: '2999-01-01T00:00:00.000Z', claims: 1 })
      .where('id', '=', id)
      .execute();
    return { id, tenantId, items: runItems };
  }

  /** The batch that commits items `from`..`to` of a run. */
  function batchOf(run: Awaited<ReturnType<typeof claimedRun>>, from: number, to: number): BatchCommit {
    const source = { runId: run.id, tenantId: run.tenantId, items: run.items.slice(from, to) };
    const scored = scoreBatch(source, from, NOW);
    return {
      runId: run.id,
      workerId: WORKER,
      claims: 1,
      fromIndex: from,
      ...scored,
      now: NOW,
      leaseMs: 30_000,
      completes: false,
    };
  }
  const nextIndex = async (id: string) =>
    (await db().selectFrom('runs').select('next_index').where('id', '=', id).executeTakeFirstOrThrow())
      .next_index;
  const itemCount = async (id: string) =>
    (await db().selectFrom('run_items').select('item_index').where('run_id', '=', id).execute()).length;

  it('wakes the delivery workers after a commit that wrote events, not after one whose escalations no webhook takes', async () => {
    let notified = 0;
    const committer = new RunBatchCommitter(storage(), { outbox: { notify: () => (notified += 1) } });
    // Nothing but the jurisdiction: every item is escalated (policy-escalation.test.ts).
    const thin = { jurisdiction: 'FR' };
    const escalated = (run: Awaited<ReturnType<typeof claimedRun>>, from: number, to: number) => {
      const batch = batchOf(run, from, to);
      expect(batch.events.map((event) => event.type)).toContain('policy.escalated');
      return batch;
    };
    const unheard = await claimedRun('no-webhook', 4, thin);
    expect(await committer.commit(escalated(unheard, 0, 2))).toBe(true);
    expect(notified).toBe(0);

    const heard = await claimedRun('with-webhook', 4, thin);
    await createTestWebhook(storage(), new SecretBox(randomBytes(32)), {
      tenantId: 'with-webhook',
      url: 'https://example.com/hook',
      events: ['policy.escalated'],
    });
    expect(await committer.commit(escalated(heard, 0, 2))).toBe(true);
    expect(notified).toBe(1);
    // A batch without events wakes nobody.
    expect(await committer.commit({ ...batchOf(heard, 2, 4), events: [] })).toBe(true);
    expect(notified).toBe(1);
  });

  it('when batches of several runs are ready together, then one transaction commits them all', async () => {
    const committer = new RunBatchCommitter(storage());
    const runs = await Promise.all([1, 2, 3].map(() => claimedRun('group', 4)));
    const results = await Promise.all(runs.map((run) => committer.commit(batchOf(run, 0, 4))));

    expect(results).toEqual([true, true, true]);
    expect(committer.stats).toMatchObject({ flushes: 1, largestBatch: 3, committedItems: 3 });
    for (const run of runs) {
      expect(await nextIndex(run.id)).toBe(4);
      expect(await itemCount(run.id)).toBe(4);
    }
  });

  it('when one batch of a group fails its fence, then it writes nothing and the others commit', async () => {
    const committer = new RunBatchCommitter(storage());
    const [kept, moved] = await Promise.all([claimedRun('fence', 3), claimedRun('fence', 3)]);
    if (!kept || !moved) throw new Error('runs missing');
    // Another worker already committed `moved` up to item 2: a batch scored from 0 must not land.
    await db().updateTable('runs').set({ next_index: 2 }).where('id', '=', moved.id).execute();
    const results = await Promise.all([
      committer.commit(batchOf(kept, 0, 3)),
      committer.commit(batchOf(moved, 0, 3)),
    ]);

    expect(results).toEqual([true, false]);
    expect(committer.stats.flushes).toBe(1);
    expect([await nextIndex(kept.id), await itemCount(kept.id)]).toEqual([3, 3]);
    expect([await nextIndex(moved.id), await itemCount(moved.id)]).toEqual([2, 0]);
  });

  it('when one batch of a group cannot be written, then only that batch fails, the others commit alone', async () => {
    const committer = new RunBatchCommitter(storage());
    const [good, bad] = await Promise.all([claimedRun('poison', 2), claimedRun('poison', 2)]);
    if (!good || !bad) throw new Error('runs missing');
    // Its rows name a run that does not exist: the foreign key refuses them, and the shared transaction.
    const poisoned = batchOf(bad, 0, 2);
    poisoned.items = poisoned.items.map((item) => ({ ...item, run_id: 'run_missing' }));
    const results = await Promise.allSettled([
      committer.commit(batchOf(good, 0, 2)),
      committer.commit(poisoned),
    ]);

    expect(results[0]).toEqual({ status: 'fulfilled', value: true });
    expect(results[1]?.status).toBe('rejected');
    expect([await nextIndex(good.id), await itemCount(good.id)]).toEqual([2, 2]);
    expect([await nextIndex(bad.id), await itemCount(bad.id)]).toEqual([0, 0]);
  });
  it.runIf(kind === 'postgres')(
    "takes its tenants' usage rows in tenant order, so a scoring's group commit growing the same tenants waits for it instead of deadlocking",
    async () => {
      const [a, b] = ['lockorder-a', 'lockorder-b'];
      // B's run first: its id is the smaller, so the batches' rows are written B's first.
      const runB = await claimedRun(b, 2);
      const runA = await claimedRun(a, 2);
      await insertLogRecords(
        storage(),
        [a, b].map((tenant, n) => ({ ...testRecord(tenant, n), requestId: `req_lock_${n}`, createdAt: NOW })),
      );
      const waiting = async (count: number) => {
        for (let i = 0; i < 500; i++) {
          const { rows } = await sql<{
            n: string;
          }>`select count(*) as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`.execute(
            db(),
          );
          if (Number(rows[0]?.n) >= count) return;
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        throw new Error(`${count} sessions never waited for a lock`);
      };
      const deadlocks = async () =>
        Number(
          (
            await sql<{
              deadlocks: string;
            }>`select deadlocks from pg_stat_database where datname = current_database()`.execute(db())
          ).rows[0]?.deadlocks,
        );
      const before = await deadlocks();

      // Someone holds B's usage row; the runs' transaction then waits for it; a scoring group commit of
      // both tenants (its usage in tenant order) comes next. Were the runs' transaction holding B's row while
      // asking for A's, the group commit (holding A's, asking for B's) would deadlock with it.
      let release = () => {};
      const held = db()
        .transaction()
        .execute(async (trx) => {
          await sql`select 1 from tenant_usage where tenant_id = ${b} for update`.execute(trx);
          await new Promise<void>((resolve) => {
            release = resolve;
          });
        });
      await new Promise((resolve) => setTimeout(resolve, 50));
      const committer = new RunBatchCommitter(storage());
      const runs = Promise.all([
        committer.commit(batchOf(runB, 0, 2)),
        committer.commit(batchOf(runA, 0, 2)),
      ]);
      await waiting(1);
      const scorings = insertLogRecords(
        storage(),
        [b, a].map((tenant, n) => ({
          ...testRecord(tenant, n + 10),
          requestId: `req_lock_${n + 10}`,
          createdAt: NOW,
        })),
      );
      await waiting(2);
      release();
      await held;
      await expect(runs).resolves.toEqual([true, true]);
      await expect(scorings).resolves.toBe(0);
      expect(committer.stats).toMatchObject({ flushes: 1, failedFlushes: 0 });
      expect(await deadlocks()).toBe(before);
    },
  );
});
