import type { Run } from '@scenario-scoring/api-types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStorage } from '../src/storage/storage.js';
import { BuiltServer, databaseEnv, requireBuiltServer } from './support/built-server.js';
import { pollUntilRunEnds, runCompletedEvents, waitForRunCompleted } from './support/run-crash-checks.js';
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from './support/test-databases.js';

const ITEMS = 1000;
/** 1,000 single-item transactions, each flushed: ~20 s alone on 2 cores, more beside other suites. */
const CRASH_TEST_TIMEOUT_MS = 90_000;

beforeAll(() => requireBuiltServer());

for (const kind of DATABASE_KINDS) {
  describe(`a run when the server is killed (${kind})`, () => {
    let database: TestDatabase;
    let env: Record<string, string>;
    beforeAll(async () => {
      database = await createTestDatabase(kind);
      env = {
        ...databaseEnv(database),
        // One item per transaction and a short lease: the kill lands mid-run, and the restart resumes soon.
        RUN_BATCH_SIZE: '1',
        RUN_LEASE: '500ms',
        RUN_POLL_INTERVAL: '50ms',
      };
    });
    afterAll(() => database.dispose());

    it('when SIGKILLed mid-run and restarted, then the run completes with every item scored exactly once and one run.completed', {
      timeout: CRASH_TEST_TIMEOUT_MS,
    }, async () => {
      const first = new BuiltServer(env);
      const firstUrl = await first.baseUrl();
      const key = first.firstKey();
      if (key === undefined) throw new Error(`no first key in:\n${first.output}`);
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
      const items = Array.from({ length: ITEMS }, (_, i) => ({
        subject: `crash-${i}`,
        context: { jurisdiction: 'DE', on_time_ratio: (i % 100) / 100, utilization: (i % 9) / 10 },
      }));
      const created = await fetch(`${firstUrl}/v1/scoring/runs`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ items }),
      });
      const { id } = (await created.json()) as Run;
      const runAt = async (baseUrl: string) =>
        (await (await fetch(`${baseUrl}/v1/scoring/runs/${id}`, { headers })).json()) as Run;
      while ((await runAt(firstUrl)).counts.succeeded < 5) await new Promise((r) => setTimeout(r, 5));
      await first.stop('SIGKILL');
      const killed = await openStorage(database.options);
      const atKill = await killed.db
        .selectFrom('runs')
        .select(['status', 'next_index'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      await killed.close();
      expect(atKill.status).toBe('running');
      expect(atKill.next_index).toBeGreaterThanOrEqual(5);
      expect(atKill.next_index).toBeLessThan(ITEMS);

      const second = new BuiltServer(env);
      try {
        const secondUrl = await second.baseUrl();
        const deadline = Date.now() + 60_000;
        const run = await pollUntilRunEnds(() => runAt(secondUrl), deadline);
        expect(run.status).toBe('completed');
        expect(run.counts.succeeded).toBe(ITEMS);
        await waitForRunCompleted(database.options, id, deadline);
      } finally {
        await second.stop('SIGTERM');
      }

      const storage = await openStorage(database.options);
      try {
        const { db } = storage;
        const items = await db
          .selectFrom('run_items')
          .select('item_index')
          .where('run_id', '=', id)
          .execute();
        expect(items.map((row) => row.item_index).sort((a, b) => a - b)).toEqual([...Array(ITEMS).keys()]);
        const logged = await db
          .selectFrom('log_records')
          .select('cid')
          .where('request_id', '=', id)
          .execute();
        expect(logged).toHaveLength(ITEMS);
        expect(await runCompletedEvents(db, id)).toHaveLength(1);
        const run = await db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
        expect(run).toMatchObject({ status: 'completed', next_index: ITEMS, succeeded: ITEMS });
        // Claimed again after the kill. On a loaded machine a 500 ms lease can also lapse between two
        // renewals and be claimed a third time: still every item exactly once, as checked above.
        expect(run.claims).toBeGreaterThanOrEqual(2);
      } finally {
        await storage.close();
      }
    });
  });
}
