import { request } from 'node:http';
import type { Run } from '@scenario-scoring/api-types';
import { waitUntil } from '@scenario-scoring/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStorage } from '../src/storage/storage.js';
import { BuiltServer, databaseEnv, requireBuiltServer } from './support/built-server.js';
import { pollUntilRunEnds, runCompletedEvents, waitForRunCompleted } from './support/run-crash-checks.js';
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from './support/test-databases.js';

const LINES = 3000;
const CRASH_TEST_TIMEOUT_MS = 120_000;

beforeAll(() => requireBuiltServer());

function line(i: number): string {
  // Every 100th line is not JSON: its item fails, the others are scored.
  if (i % 100 === 99) return `{"subject": "crash-${i}"`;
  return JSON.stringify({
    subject: `crash-${i}`,
    context: { jurisdiction: 'DE', on_time_ratio: (i % 100) / 100, utilization: (i % 9) / 10 },
  });
}
const FAILED = LINES / 100;

for (const kind of DATABASE_KINDS) {
  describe(`an NDJSON run when the server is killed (${kind})`, () => {
    let database: TestDatabase;
    let env: Record<string, string>;
    // The first key is printed by the first start on the database only (the mid-upload test's).
    let key: string | undefined;
    beforeAll(async () => {
      database = await createTestDatabase(kind);
      env = {
        ...databaseEnv(database),
        RUN_BATCH_SIZE: '10',
        RUN_LEASE: '500ms',
        RUN_POLL_INTERVAL: '50ms',
        RUN_NDJSON_UPLOAD_LEASE: '1s',
      };
    });
    afterAll(() => database.dispose());

    const count = async (table: 'runs' | 'run_inputs', where?: [string, string]) => {
      const storage = await openStorage(database.options);
      try {
        let query = storage.db.selectFrom(table).select((eb) => eb.fn.countAll().as('n'));
        if (where) query = query.where(where[0] as never, '=', where[1] as never);
        return Number((await query.executeTakeFirstOrThrow()).n);
      } finally {
        await storage.close();
      }
    };

    it('when SIGKILLed mid-upload, then the run never existed: it is not shown, and its lines are swept once its lease passed', {
      timeout: CRASH_TEST_TIMEOUT_MS,
    }, async () => {
      const first = new BuiltServer(env);
      const url = new URL(await first.baseUrl());
      key = first.firstKey();
      if (key === undefined) throw new Error(`no first key in:\n${first.output}`);
      const upload = request({
        host: url.hostname,
        port: url.port,
        method: 'POST',
        path: '/v1/scoring/runs',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/x-ndjson',
          'transfer-encoding': 'chunked',
        },
      });
      upload.on('error', () => {});
      // More than a batch of lines (2,000 a transaction), and the body never ends.
      upload.write(`${Array.from({ length: LINES }, (_, i) => line(i)).join('\n')}\n`);
      await waitUntil(async () => (await count('run_inputs')) >= 2000, 30_000);
      await first.stop('SIGKILL');
      upload.destroy();
      expect(await count('runs', ['status', 'uploading'])).toBe(1);

      // The lease (1 s) passes; a new server's run workers sweep the upload away on their first claim.
      await new Promise((resolve) => setTimeout(resolve, 1200));
      const second = new BuiltServer(env);
      try {
        const secondUrl = await second.baseUrl();
        const listed = await fetch(`${secondUrl}/v1/scoring/runs/run_00000000000000000000000000`, {
          headers: { authorization: `Bearer ${key}` },
        });
        expect(listed.status).toBe(404);
        await waitUntil(async () => (await count('runs')) === 0 && (await count('run_inputs')) === 0, 30_000);
      } finally {
        await second.stop('SIGTERM');
      }
    });

    it('when SIGKILLed mid-run and restarted, then the run completes with every item attempted exactly once and one run.completed', {
      timeout: CRASH_TEST_TIMEOUT_MS,
    }, async () => {
      const first = new BuiltServer(env);
      const firstUrl = await first.baseUrl();
      if (key === undefined) throw new Error('the mid-upload test did not get the first key');
      const headers = { authorization: `Bearer ${key}` };
      const created = await fetch(`${firstUrl}/v1/scoring/runs`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/x-ndjson' },
        body: `${Array.from({ length: LINES }, (_, i) => line(i)).join('\n')}\n`,
      });
      expect(created.status).toBe(202);
      const { id } = (await created.json()) as Run;
      const runAt = async (baseUrl: string) =>
        (await (await fetch(`${baseUrl}/v1/scoring/runs/${id}`, { headers })).json()) as Run;
      while ((await runAt(firstUrl)).progress.attempted < 50) await new Promise((r) => setTimeout(r, 5));
      await first.stop('SIGKILL');

      const second = new BuiltServer(env);
      try {
        const secondUrl = await second.baseUrl();
        const run = await pollUntilRunEnds(() => runAt(secondUrl), Date.now() + 90_000);
        expect(run).toMatchObject({
          status: 'completed',
          item_count: LINES,
          counts: { succeeded: LINES - FAILED, failed: FAILED },
        });
        await waitForRunCompleted(database.options, id, Date.now() + 30_000);
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
        expect(items.map((row) => row.item_index).sort((a, b) => a - b)).toEqual([...Array(LINES).keys()]);
        const logged = await db
          .selectFrom('log_records')
          .select('cid')
          .where('request_id', '=', id)
          .execute();
        expect(logged).toHaveLength(LINES - FAILED);
        expect(await runCompletedEvents(db, id)).toHaveLength(1);
        const left = await db.selectFrom('run_inputs').select('run_id').where('run_id', '=', id).execute();
        expect(left).toEqual([]);
        const row = await db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
        expect(row.claims).toBeGreaterThanOrEqual(2);
      } finally {
        await storage.close();
      }
    });
  });
}
