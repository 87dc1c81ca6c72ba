import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { closeTestStorage, testFeatures } from '../../test/support/test-features.js';
import { DataDirInUseError, SERVER_LOCK_FILE_NAME, takeServerLock } from './server-lock.js';
import { openStorage } from './storage.js';

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});
function freshDataDir(): string {
  const root = mkdtempSync(join(tmpdir(), 'ss-lock-'));
  roots.push(root);
  return join(root, 'data');
}

it('refuses a second holder of a DATA_DIR (in this process too), naming the first, until it is released', () => {
  const dataDir = freshDataDir();
  const lock = takeServerLock(dataDir);
  expect(statSync(join(dataDir, SERVER_LOCK_FILE_NAME)).mode & 0o777).toBe(0o600);
  let refusal: unknown;
  try {
    takeServerLock(dataDir);
  } catch (error) {
    refusal = error;
  }
  expect(refusal).toBeInstanceOf(DataDirInUseError);
  const { holder, message } = refusal as DataDirInUseError;
  expect(holder).toMatchObject({ pid: process.pid, host: hostname() });
  expect(Date.parse(holder?.startedAt ?? '')).toBeGreaterThan(Date.now() - 60_000);
  expect(message).toBe(
    `DATA_DIR ${dataDir} is in use by another scenario-scoring server (pid ${process.pid}, started ` +
      `${holder?.startedAt}): one server per SQLite DATA_DIR. Stop that server first, or use PostgreSQL ` +
      '(DATABASE_URL) to run several instances. Nothing was changed.',
  );

  // A refused start changed nothing: the holder's lock and record stand.
  expect(() => takeServerLock(dataDir)).toThrow(DataDirInUseError);
  lock.release();
  lock.release();
  const again = takeServerLock(dataDir);
  again.release();
});

it('leaves the data open to everything but a second server: the storage opens, writes and reads (the CLI, the tests) while it is held', async () => {
  const dataDir = freshDataDir();
  const lock = takeServerLock(dataDir);
  try {
    const storage = await openStorage({ dataDir });
    const { keys } = testFeatures(storage);
    await keys.create('beside-the-lock');
    expect(await keys.countActive()).toBe(1);
    await closeTestStorage(storage);
  } finally {
    lock.release();
  }
});
