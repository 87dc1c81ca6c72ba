import { randomUUID } from 'node:crypto';
import { mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SERVER_LOCK_FILE_NAME, takeServerLock } from '../src/storage/server-lock.js';
import { BuiltServer, databaseEnv, requireBuiltServer, runBuiltCli } from './support/built-server.js';
import { createTestDatabase, type TestDatabase } from './support/test-databases.js';

/**
 * One server per SQLite DATA_DIR (storage/server-lock.ts): a second built server on a running one's
 * DATA_DIR exits 1 saying so, and the first serves on; the CLI works beside the server; the lock goes with
 * its holder, whether stopped by SIGTERM or killed by SIGKILL.
 */
let database: TestDatabase;
let env: Record<string, string>;
beforeAll(async () => {
  requireBuiltServer();
  database = await createTestDatabase('sqlite');
  env = databaseEnv(database);
});
afterAll(() => database.dispose());

const IN_USE =
  /DATA_DIR (\S+) is in use by another scenario-scoring server \(pid (\d+), started ([0-9T:.Z-]+)\): one server per SQLite DATA_DIR\. Stop that server first, or use PostgreSQL \(DATABASE_URL\) to run several instances\. Nothing was changed\./;

async function scores(url: string, key: string): Promise<number> {
  const response = await fetch(`${url}/v1/scoring/score`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ subject: `lock-${randomUUID()}`, context: { jurisdiction: 'DE' } }),
  });
  return response.status;
}

it('refuses a second server on the same SQLite DATA_DIR, naming the first, which keeps serving; the CLI works beside it; after SIGKILL, and after SIGTERM, a new server starts there', async () => {
  let server = new BuiltServer(env);
  try {
    let url = await server.baseUrl();
    const key = server.firstKey();
    if (key === undefined) throw new Error(`no first key in:\n${server.output}`);
    expect(await scores(url, key)).toBe(200);

    const second = new BuiltServer({ ...env, PORT: '0' });
    const { code } = await second.exited;
    expect(code, second.output).toBe(1);
    const [, dir, pid] = second.output.match(IN_USE) ?? [];
    expect(dir, second.output).toBe(env.DATA_DIR);
    expect(Number(pid)).toBe(server.process.pid);
    // Refused before it opened the storage: it neither listened nor made a key, nor logged a failure.
    expect(second.output).not.toMatch(/listening|Created an API key|failed to start/);
    expect(server.running).toBe(true);
    expect(await scores(url, key)).toBe(200);

    // The CLI opens the same DATA_DIR while the server runs, and the server uses what it wrote.
    const created = await runBuiltCli(['create-key', '--tenant', 'beside'], env);
    expect(created, created.stderr).toMatchObject({ code: 0, stderr: '' });
    const listed = await runBuiltCli(['list-keys', '--tenant', 'beside'], env);
    expect(listed).toMatchObject({ code: 0, stderr: '' });
    expect(listed.stdout).toMatch(/\bbeside\b.*\bactive\b/);
    expect(await scores(url, created.stdout.trim())).toBe(200);

    // Killed with SIGKILL: nothing released the lock but the kernel, and a new server starts at once.
    expect(await server.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    server = new BuiltServer(env);
    url = await server.baseUrl();
    expect(await scores(url, key)).toBe(200);

    // Stopped by SIGTERM: it drains, releases the lock, and the next start takes it.
    expect(await server.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    server = new BuiltServer(env);
    url = await server.baseUrl();
    expect(await scores(url, key)).toBe(200);
    const refused = new BuiltServer(env);
    expect((await refused.exited).code, refused.output).toBe(1);
    expect(refused.output.match(IN_USE)?.[2]).toBe(String(server.process.pid));
  } finally {
    await server.stop('SIGTERM');
  }
}, 90_000);

it('stops a server whose server.lock was replaced by one another server holds, at once, exiting 1 with the reason', async () => {
  const server = new BuiltServer({ ...env, SHUTDOWN_DRAIN_DELAY: '30s' });
  const elsewhere = mkdtempSync(join(tmpdir(), 'ss-lock-other-'));
  const other = takeServerLock(elsewhere);
  try {
    await server.baseUrl();
    renameSync(join(elsewhere, SERVER_LOCK_FILE_NAME), join(env.DATA_DIR as string, SERVER_LOCK_FILE_NAME));
    // Checked every 2 s; then it stops at once, its workers first, whatever SHUTDOWN_DRAIN_DELAY says.
    const { code } = await server.exited;
    expect(code, server.output).toBe(1);
    const [, pid] =
      server.output.match(
        /server\.lock in DATA_DIR \S+ was replaced by one another server holds \(pid (\d+), started [0-9T:.Z-]+\), so another server may be using this DATA_DIR: this server stops now \(its log workers and its listener at once\) and exits 1\./,
      ) ?? [];
    expect(pid, server.output).toBe(String(process.pid));
    expect(server.output).not.toMatch(/"draining"|drainDelayMs/);
  } finally {
    other.release();
    rmSync(elsewhere, { recursive: true, force: true });
    await server.stop('SIGKILL');
  }
}, 60_000);
