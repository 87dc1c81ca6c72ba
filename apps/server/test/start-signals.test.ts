import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireBuiltServer, SERVER_DIR } from './support/built-server.js';

/**
 * `scripts/start.sh` and `npm start`, the two ways the README starts the server: a SIGTERM or a Ctrl-C
 * (SIGINT) sent to what the operator started must reach the server, which drains and exits, so that
 * nothing is left holding the port.
 */
const ROOT = join(SERVER_DIR, '..', '..');
const START_TIMEOUT_MS = 90_000;

/** The environment without the npm_* settings of an enclosing `npm run`, which would steer the inner npm. */
const cleanEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));

let dataDir = '';
beforeAll(async () => {
  requireBuiltServer();
  dataDir = await mkdtemp(join(tmpdir(), 'ss-start-'));
});
afterAll(() => rm(dataDir, { recursive: true, force: true }));

function start(command: string, args: readonly string[]) {
  const child = spawn(command, [...args], {
    cwd: ROOT,
    env: { ...cleanEnv, PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, NODE_ENV: 'production' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  return { child, exited, output: () => output };
}

async function waitForPort(read: () => string, child: ChildProcess): Promise<number> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    const match = /listening on http:\/\/localhost:(\d+)/.exec(read());
    if (match) return Number(match[1]);
    if (child.exitCode !== null) throw new Error(`exited before listening:\n${read()}`);
    if (Date.now() > deadline) throw new Error(`not listening within ${START_TIMEOUT_MS} ms:\n${read()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Whether something still accepts connections on the port. */
function portIsOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('starting the server the README way', () => {
  const cases = [
    { name: 'bash scripts/start.sh', command: 'bash', args: ['scripts/start.sh'], signal: 'SIGTERM' },
    { name: 'npm start', command: 'npm', args: ['start', '--silent'], signal: 'SIGTERM' },
    { name: 'npm start (Ctrl-C)', command: 'npm', args: ['start', '--silent'], signal: 'SIGINT' },
  ] as const;
  for (const { name, command, args, signal } of cases) {
    it(`${name}: ${signal} reaches the server, which drains, exits 0 and frees its port`, {
      timeout: START_TIMEOUT_MS + 30_000,
    }, async () => {
      const started = start(command, args);
      try {
        const port = await waitForPort(started.output, started.child);
        expect(await portIsOpen(port)).toBe(true);
        started.child.kill(signal);
        const status = await Promise.race([
          started.exited,
          new Promise((resolve) => setTimeout(() => resolve('still running'), 15_000)),
        ]);
        expect(status, started.output()).toEqual({ code: 0, signal: null });
        expect(started.output()).toContain(`"signal":"${signal}","message":"shutting down"`);
        expect(started.output()).toContain('"message":"stopped"');
        expect(await portIsOpen(port)).toBe(false);
      } finally {
        started.child.kill('SIGKILL');
      }
    });
  }
});
