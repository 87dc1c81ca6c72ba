import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Run } from '@scenario-scoring/api-types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStorage } from '../src/storage/storage.js';
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from '../src/storage/test-databases.js';

const serverDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const MAIN = join(serverDir, 'dist', 'main.js');
const ITEMS = 1000;

/** The built server as `npm start` runs it, with its output collected. */
function startServer(env: Record<string, string>) {
  const child: ChildProcess = spawn(process.execPath, [MAIN], {
    cwd: serverDir,
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production', PORT: '0', HOST: '127.0.0.1', ...env },
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const waitFor = async (pattern: RegExp, timeoutMs = 20_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const match = output.match(pattern);
      if (match) return match;
      if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) {
        throw new Error(`no ${pattern} in the output of the server:\n${output}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  return { child, exited, waitFor };
}

beforeAll(() => {
  if (!existsSync(MAIN))
    throw new Error('the server is not built: run "npm run build -w @scenario-scoring/server"');
});

for (const kind of DATABASE_KINDS) {
  describe(`a run when the server is killed (${kind})`, () => {
    let database: TestDatabase;
    let env: Record<string, string>;
    beforeAll(async () => {
      database = await createTestDatabase(kind);
      env = {
        DATA_DIR: database.options.dataDir,
        // One item per transaction and a short lease: the kill lands mid-run, and the restart resumes soon.
        RUN_BATCH_SIZE: '1',
        RUN_LEASE: '500ms',
        RUN_POLL_INTERVAL: '50ms',
        ...(database.options.databaseUrl !== undefined && {
          DATABASE_URL: database.options.databaseUrl,
          SECRETS_KEY: randomBytes(32).toString('base64'),
        }),
      };
    });
    afterAll(() => database.dispose());

    it('when SIGKILLed mid-run and restarted, then the run completes with every item scored exactly once and one run.completed', async () => {
      const first = startServer(env);
      const [, key] = await first.waitFor(/\(shown once\): (sk_\w+)\n/);
      const [, port] = await first.waitFor(/listening on http:\/\/localhost:(\d+)/);
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
      const items = Array.from({ length: ITEMS }, (_, i) => ({
        subject: `crash-${i}`,
        context: { jurisdiction: 'DE', on_time_ratio: (i % 100) / 100, utilization: (i % 9) / 10 },
      }));
      const created = await fetch(`http://127.0.0.1:${port}/v1/scoring/runs`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ items }),
      });
      const { id } = (await created.json()) as Run;
      const runAt = async (p: string) =>
        (await (await fetch(`http://127.0.0.1:${p}/v1/scoring/runs/${id}`, { headers })).json()) as Run;
      while ((await runAt(port as string)).counts.succeeded < 5) await new Promise((r) => setTimeout(r, 5));
      first.child.kill('SIGKILL');
      await first.exited;
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

      const second = startServer(env);
      try {
        const [, port2] = await second.waitFor(/listening on http:\/\/localhost:(\d+)/);
        const deadline = Date.now() + 60_000;
        let run = await runAt(port2 as string);
        while (run.status === 'running' && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 50));
          run = await runAt(port2 as string);
        }
        expect(run.status).toBe('completed');
        expect(run.counts.succeeded).toBe(ITEMS);
      } finally {
        second.child.kill('SIGTERM');
        await second.exited;
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
        const completed = await db
          .selectFrom('events')
          .select('payload')
          .where('type', '=', 'run.completed')
          .where('payload', 'like', `%"run_id":"${id}"%`)
          .execute();
        expect(completed).toHaveLength(1);
        const run = await db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
        expect(run).toMatchObject({ status: 'completed', next_index: ITEMS, succeeded: ITEMS, claims: 2 });
      } finally {
        await storage.close();
      }
    });
  });
}
