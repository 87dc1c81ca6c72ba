import { execFile } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { waitUntil } from '@scenario-scoring/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/test-databases.js';
import { SQLITE_FILE_NAME } from './sqlite-database.js';
import { openStorage, type Storage } from './storage.js';

describe('the SQLite checkpointer', () => {
  let database: TestDatabase | undefined;
  let storage: Storage | undefined;
  afterEach(async () => {
    await storage?.close();
    await database?.dispose();
  });

  it('when rows are committed, then a background thread copies them into the database file, and closing leaves no WAL', async () => {
    database = await createTestDatabase('sqlite');
    storage = await openStorage(database.options);
    const file = join(database.options.dataDir, SQLITE_FILE_NAME);
    const before = statSync(file).size;
    // About 2 MB: far below the writer's fallback autocheckpoint, so only the thread can move it.
    const bytes = new Uint8Array(2000).fill(7);
    for (let batch = 0; batch < 10; batch++) {
      const rows = Array.from({ length: 100 }, (_, i) => ({
        tenant_id: 'checkpoint',
        cid: `cid_${batch}_${i}`,
        bytes,
        request_id: 'req_checkpoint',
        created_at: '2026-11-22T10:00:00.000Z',
      }));
      await storage.db.insertInto('log_records').values(rows).execute();
    }
    await waitUntil(() => statSync(file).size >= before + 2_000_000, 15_000, 'the database file to grow');

    await storage.close();
    storage = undefined;
    expect(existsSync(`${file}-wal`)).toBe(false);
  });

  it('when the thread fails, then the process carries on and close() still resolves', async () => {
    // In a child process: an unhandled rejection there ends that process, not the test run. It runs the
    // built checkpointer (and so the built thread), as the server does: Node cannot run the TypeScript
    // sources of a module that imports others.
    const built = new URL('../../dist/storage/sqlite-checkpointer.js', import.meta.url);
    expect(existsSync(built), 'the server is built (npx turbo run build)').toBe(true);
    const checkpointerUrl = JSON.stringify(built.href);
    const script = `
      const { subscribe } = require('node:diagnostics_channel');
      const exited = new Promise((resolve) =>
        subscribe('worker_threads', ({ worker }) => worker.once('exit', resolve)),
      );
      const keepAlive = setTimeout(() => {}, 10_000);
      import(${checkpointerUrl}).then(async ({ SqliteCheckpointer }) => {
        // No such directory: the thread cannot open the database and dies with an error.
        const checkpointer = new SqliteCheckpointer('/nonexistent-checkpointer-dir/data.sqlite');
        await exited;
        await new Promise((resolve) => setTimeout(resolve, 50));
        clearTimeout(keepAlive);
        await checkpointer.close();
        console.log('still running');
      });
    `;
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', script]);
    expect(stdout.trim()).toBe('still running');
  });
});
