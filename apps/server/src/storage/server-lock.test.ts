import {
  chmodSync,
  copyFileSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { closeTestStorage, testFeatures } from '../../test/support/test-features.js';
import {
  DataDirInUseError,
  SERVER_LOCK_FILE_NAME,
  ServerLockError,
  ServerLockLostError,
  takeServerLock,
} from './server-lock.js';
import { SQLITE_FILE_NAME } from './sqlite-database.js';

/** Who holds `dataDir`, as a second taker is told (the refusal's `holder`). */
function holderOf(dataDir: string): unknown {
  try {
    takeServerLock(dataDir).release();
  } catch (error) {
    if (error instanceof DataDirInUseError) return error.holder;
    throw error;
  }
  throw new Error(`nobody held ${dataDir}`);
}

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

it('names the DATA_DIR a relative path resolves to', () => {
  const dataDir = freshDataDir();
  const lock = takeServerLock(dataDir);
  const cwd = process.cwd();
  try {
    process.chdir(join(dataDir, '..'));
    expect(() => takeServerLock('data')).toThrow(`DATA_DIR data (${dataDir}) is in use`);
  } finally {
    process.chdir(cwd);
    lock.release();
  }
});

it('refuses a server.lock that cannot be the lock, in plain words, touching nothing of the data', async () => {
  const cases: [string, (file: string, dataDir: string) => void, string][] = [
    ['a directory', (file) => mkdirSync(file), 'it is not a regular file'],
    ['a symbolic link to the data', (file) => symlinkSync(SQLITE_FILE_NAME, file), 'it is a symbolic link'],
    [
      'a hard link to the data',
      (file, dataDir) => linkSync(join(dataDir, SQLITE_FILE_NAME), file),
      'it has 2 names (a hard link)',
    ],
    [
      "a copy of the data's database",
      (file, dataDir) => copyFileSync(join(dataDir, SQLITE_FILE_NAME), file),
      'it is another database, holding',
    ],
    ['not a database', (file) => writeFileSync(file, 'not a lock\n'.repeat(100)), 'file is not a database'],
  ];
  for (const [what, make, reason] of cases) {
    const dataDir = freshDataDir();
    const storage = await openStorage({ dataDir });
    await closeTestStorage(storage);
    const file = join(dataDir, SERVER_LOCK_FILE_NAME);
    make(file, dataDir);
    const data = lstatSync(join(dataDir, SQLITE_FILE_NAME));
    let refusal: unknown;
    try {
      takeServerLock(dataDir).release();
    } catch (error) {
      refusal = error;
    }
    expect(refusal, what).toBeInstanceOf(ServerLockError);
    expect((refusal as Error).message, what).toMatch(
      `${file} could not be used as the server's lock on its DATA_DIR (${reason}`,
    );
    expect((refusal as Error).message, what).toMatch(
      /\)\. It is made by the server and must be a regular file it can write; with no server running on this DATA_DIR, remove it and start again\. Nothing was changed\.$/,
    );
    const after = lstatSync(join(dataDir, SQLITE_FILE_NAME));
    expect([after.size, after.mtimeMs], what).toEqual([data.size, data.mtimeMs]);
  }
});

it('changes no mode of a DATA_DIR another server holds', () => {
  const dataDir = freshDataDir();
  const lock = takeServerLock(dataDir);
  try {
    chmodSync(dataDir, 0o755);
    expect(() => takeServerLock(dataDir)).toThrow(DataDirInUseError);
    expect(statSync(dataDir).mode & 0o777).toBe(0o755);
  } finally {
    lock.release();
  }
});

it('takes the lock again when server.lock is removed, and says so; a second holder is then refused', () => {
  const dataDir = freshDataDir();
  const lock = takeServerLock(dataDir);
  try {
    expect(lock.check()).toBe('held');
    const before = holderOf(dataDir);
    rmSync(join(dataDir, SERVER_LOCK_FILE_NAME));
    expect(lock.check()).toBe('retaken');
    expect(lock.check()).toBe('held');
    // The record names the same server, started when it started, not when it took the lock again.
    expect(holderOf(dataDir)).toEqual(before);
  } finally {
    lock.release();
  }
  takeServerLock(dataDir).release();
});

it('is lost when server.lock is replaced by one another server holds: check throws, naming that server', () => {
  const dataDir = freshDataDir();
  const lock = takeServerLock(dataDir);
  // Another "server" holds a lock file of its own, which then takes the place of this one's.
  const elsewhere = freshDataDir();
  const other = takeServerLock(elsewhere);
  try {
    renameSync(join(elsewhere, SERVER_LOCK_FILE_NAME), join(dataDir, SERVER_LOCK_FILE_NAME));
    let lost: unknown;
    try {
      lock.check();
    } catch (error) {
      lost = error;
    }
    expect(lost).toBeInstanceOf(ServerLockLostError);
    expect((lost as ServerLockLostError).cause).toBeInstanceOf(DataDirInUseError);
    expect((lost as Error).message).toMatch(
      new RegExp(
        `^server\\.lock in DATA_DIR ${dataDir} was replaced by one another server holds \\(pid ${process.pid}, started [0-9T:.Z-]+\\), so another server may be using this DATA_DIR: this server stops now \\(its log workers and its listener at once\\) and exits 1\\.$`,
      ),
    );
    // Lost for good: this lock holds nothing now, and says so no more.
    expect(lock.check()).toBe('held');
    expect(() => takeServerLock(dataDir)).toThrow(DataDirInUseError);
  } finally {
    lock.release();
    other.release();
  }
  takeServerLock(dataDir).release();
});
