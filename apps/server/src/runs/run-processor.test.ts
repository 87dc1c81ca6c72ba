import { randomBytes } from 'node:crypto';
import type { RunCompletedEvent, ScoreRequest } from '@scenario-scoring/api-types';
import { waitUntil } from '@scenario-scoring/testkit';
import { expect, it } from 'vitest';
import { signAndReleaseRuns } from '../../test/support/log-fixtures.js';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testRunWorker } from '../../test/support/test-run-worker.js';
import { createTestWebhook } from '../../test/support/test-webhooks.js';
import { newId } from '../common/ids.js';
import { SecretBox } from '../webhooks/outbound/secret-box.js';
import { scoreBatch } from './run-batch.js';
import type { RunOutcome } from './run-processor.js';
import { insertRun } from './run-store.js';
import type { ScoringPool } from './scoring-pool.js';

/** A pool of `size` pretend threads that finish their batches in a scrambled order. */
function scramblingPool(size: number): ScoringPool {
  let turn = 0;
  return {
    size,
    score(source, from, now) {
      const delay = [15, 1, 8][turn++ % 3] as number;
      const batch = scoreBatch(source, from, now);
      return new Promise((resolve) => setTimeout(() => resolve(batch), delay));
    },
    close: async () => {},
  } as ScoringPool;
}

forEachDatabase('processing a run', ({ storage }) => {
  it('asks its pool for two batches beyond the one committing, so a scoring thread never waits on a commit for work', async () => {
    const tenant = 'ahead';
    const id = newId('run');
    const items: ScoreRequest[] = Array.from({ length: 40 }, (_, i) => ({
      subject: `${id}-${i}`,
      context: { jurisdiction: 'DE', on_time_ratio: 0.9, utilization: (i % 10) / 10 },
    }));
    await storage()
      .db.transaction()
      .execute((trx) => insertRun(trx, { id, tenantId: tenant, items, now: new Date(), deadlineAt: null }));
    // One thread whose batches finish only when let go: the batches asked for before any is done.
    const asked: (() => void)[] = [];
    const pool = {
      size: 1,
      score(source, from, now) {
        const batch = scoreBatch(source, from, now);
        return new Promise((resolve) => asked.push(() => resolve(batch)));
      },
      close: async () => {},
    } as ScoringPool;
    let outcome: RunOutcome | undefined;
    const worker = testRunWorker(storage(), {
      pool,
      config: { batchSize: 10 },
      onRunEnded: (_run, ended) => (outcome = ended),
    });
    worker.start();
    await waitUntil(async () => asked.length >= 3, 5_000);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(asked).toHaveLength(3);
    // Let every batch go as it is asked for: the run completes, each item once.
    const release = setInterval(() => asked.shift()?.(), 1);
    await waitUntil(async () => outcome !== undefined, 15_000);
    clearInterval(release);
    await worker.stop();
    expect(outcome).toBe('completed');
    const rows = await storage()
      .db.selectFrom('run_items')
      .select('item_index')
      .where('run_id', '=', id)
      .execute();
    expect(rows.map((row) => row.item_index).sort((a, b) => a - b)).toEqual(items.map((_, i) => i));
    // Its run.completed waits for its records to be signed: sign them, so the next test counts its own run.
    expect(await signAndReleaseRuns(storage())).toBe(1);
  });

  it('when batches are scored in parallel and finish out of order, then they commit in item order with the run’s totals', async () => {
    const tenant = 'parallel';
    const id = newId('run');
    const items: ScoreRequest[] = Array.from({ length: 50 }, (_, i) => ({
      subject: `${id}-${i}`,
      context: {
        jurisdiction: i % 2 ? 'DE' : 'US-CA',
        on_time_ratio: 0.8 + (i % 5) / 25,
        utilization: (i % 10) / 10,
      },
    }));
    const now = new Date('2026-11-22T10:00:00.000Z');
    await storage()
      .db.transaction()
      .execute((trx) => insertRun(trx, { id, tenantId: tenant, items, now, deadlineAt: null }));
    // Escalation events are written only for a tenant with a webhook taking them.
    await createTestWebhook(storage(), new SecretBox(randomBytes(32)), {
      tenantId: tenant,
      url: 'https://example.com/hook',
      events: ['policy.escalated'],
    });
    let outcome: RunOutcome | undefined;
    const worker = testRunWorker(storage(), {
      pool: scramblingPool(3),
      config: { batchSize: 7 },
      onRunEnded: (_run, ended) => (outcome = ended),
    });
    worker.start();
    await waitUntil(async () => outcome !== undefined, 15_000);
    await worker.stop();

    const db = storage().db;
    const run = await db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    const indexes = await db
      .selectFrom('run_items')
      .select('item_index')
      .where('run_id', '=', id)
      .orderBy('item_index')
      .execute();
    const escalated = await db
      .selectFrom('events')
      .select('id')
      .where('tenant_id', '=', tenant)
      .where('type', '=', 'policy.escalated')
      .execute();
    // run.completed is sent once the run's records are signed.
    expect(await signAndReleaseRuns(storage())).toBe(1);
    const completed = await db
      .selectFrom('events')
      .select('payload')
      .where('tenant_id', '=', tenant)
      .where('type', '=', 'run.completed')
      .execute();
    expect(outcome).toBe('completed');
    expect(indexes.map((row) => row.item_index)).toEqual([...Array(50).keys()]);
    expect(run).toMatchObject({ status: 'completed', next_index: 50, succeeded: 50, failed: 0 });
    expect(escalated.length).toBeGreaterThan(0);
    expect(run.escalated).toBe(escalated.length);
    const data = completed.map((row) => (JSON.parse(row.payload) as RunCompletedEvent).data);
    expect(data.map((event) => event.counts)).toEqual([
      { succeeded: 50, failed: 0, escalated: escalated.length },
    ]);
  });
});
