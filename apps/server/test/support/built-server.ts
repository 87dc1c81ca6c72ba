/**
 * The built server (`dist/main.js`) as a child process, as `npm start` runs it: what every suite in this
 * folder starts, on the child-process watcher of the testkit (its output read and kept, killed if the test
 * process dies first).
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type ExitStatus,
  runNodeProcess,
  startNodeProcess,
  type WatchedProcess,
} from '@scenario-scoring/testkit';
import { afterAll, beforeAll, describe } from 'vitest';
import {
  createTestDatabase,
  DATABASE_KINDS,
  type DatabaseKind,
  type TestDatabase,
} from './test-databases.js';

/** The server package's folder. */
export const SERVER_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The built entry point, as `npm start` runs it. */
export const SERVER_MAIN = join(SERVER_DIR, 'dist', 'main.js');
/** The built CLI (`create-key`). */
export const SERVER_CLI = join(SERVER_DIR, 'dist', 'cli.js');

const FIRST_KEY_LINE = /Created an API key for tenant "default" \(shown once\): (sk_\w{40})\b/;
const LISTENING_LINE = /scenario-scoring listening on http:\/\/localhost:(\d+) — docs at/;
const POLL_MS = 25;

/** Throws unless the server is built (the tests run the built output, as a deployment does). */
export function requireBuiltServer(main = SERVER_MAIN): void {
  if (!existsSync(main) || !existsSync(join(dirname(main), 'contract', 'openapi.json'))) {
    throw new Error(`${main} is missing: run "npx turbo run build --filter=@scenario-scoring/server" first`);
  }
}

/**
 * The server's environment for a test database: DATA_DIR, and with PostgreSQL DATABASE_URL and the
 * SECRETS_KEY and LOG_SIGNING_KEY it requires. Pass `secretsKey` (base64) to share it with the test (to seal webhook secrets
 * the server opens); it is then set with SQLite too.
 */
export function databaseEnv(database: TestDatabase, secretsKey?: string): Record<string, string> {
  const { dataDir, databaseUrl } = database.options;
  // Derived from the database, like the log key: every instance started on it has the database's keys.
  const key = secretsKey ?? (databaseUrl === undefined ? undefined : secretsKeyOf(databaseUrl));
  return {
    DATA_DIR: dataDir,
    ...(databaseUrl !== undefined && { DATABASE_URL: databaseUrl }),
    ...(key !== undefined && { SECRETS_KEY: key }),
    // Every instance on one database signs the log with one key: derived from the database, so it is shared.
    ...(databaseUrl !== undefined && { LOG_SIGNING_KEY: logSigningKeyOf(databaseUrl) }),
  };
}

/**
 * Registers `suite` once per database (`<name> (sqlite)`, `<name> (postgres)`), each with its own fresh
 * database made in beforeAll and dropped in afterAll; `env()` is the built server's environment for it
 * (valid inside tests and hooks).
 */
export function forEachServerDatabase(
  name: string,
  suite: (env: () => Record<string, string>, kind: DatabaseKind) => void,
): void {
  for (const kind of DATABASE_KINDS) {
    describe(`${name} (${kind})`, () => {
      let database: TestDatabase | undefined;
      let env: Record<string, string> | undefined;
      beforeAll(async () => {
        database = await createTestDatabase(kind);
        env = databaseEnv(database);
      });
      afterAll(() => database?.dispose());
      suite(() => {
        if (env === undefined) throw new Error('used outside a test: the database is made in beforeAll');
        return env;
      }, kind);
    });
  }
}

/** The log signing key the instances on `databaseUrl` share in tests (base64 of 32 bytes). */
export function logSigningKeyOf(databaseUrl: string): string {
  return createHash('sha256').update(`log signing key of ${databaseUrl}`).digest('base64');
}

/** The SECRETS_KEY the instances on `databaseUrl` share in tests (base64 of 32 bytes). */
export function secretsKeyOf(databaseUrl: string): string {
  return createHash('sha256').update(`secrets key of ${databaseUrl}`).digest('base64');
}

/** Runs the built CLI to completion with exactly `env` (plus PATH). */
export function runBuiltCli(args: string[], env: Record<string, string>) {
  return runNodeProcess([SERVER_CLI, ...args], {
    cwd: SERVER_DIR,
    env: { PATH: process.env.PATH ?? '', ...env },
  });
}

/** A built server process started with exactly `env` (plus PATH and defaults), all its output kept. */
export class BuiltServer {
  readonly process: WatchedProcess;

  constructor(env: Record<string, string>, main = SERVER_MAIN) {
    this.process = startNodeProcess([main], {
      cwd: dirname(main),
      env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production', PORT: '0', HOST: '127.0.0.1', ...env },
      keepChars: Number.POSITIVE_INFINITY,
    });
  }

  /** Everything it printed on stdout and stderr, interleaved. */
  get output(): string {
    return this.process.output();
  }

  /** Resolves when it exits. */
  get exited(): Promise<ExitStatus> {
    return this.process.exited;
  }

  /** Whether it is still running. */
  get running(): boolean {
    return !this.process.hasExited();
  }

  /** Resolves with the first match of `pattern` in the output; rejects when the process exits first. */
  waitFor(pattern: RegExp, timeoutMs = 30_000): Promise<RegExpMatchArray> {
    return this.process.waitForOutput(pattern, timeoutMs);
  }

  /** The API's base URL, once the server printed where it listens. */
  async baseUrl(): Promise<string> {
    const [, port] = await this.waitFor(LISTENING_LINE);
    return `http://127.0.0.1:${port}`;
  }

  /** The first key, when this process created it. */
  firstKey(): string | undefined {
    return this.output.match(FIRST_KEY_LINE)?.[1];
  }

  /** The JSON log lines printed so far. */
  logLines(): Record<string, unknown>[] {
    return this.output
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }

  /** The metrics port from the `started` log line (METRICS_PORT=0 picks a free one). */
  async metricsUrl(): Promise<string> {
    await this.waitFor(/"message":"started"/);
    const started = this.logLines().find((line) => line.message === 'started');
    return `http://127.0.0.1:${String(started?.metricsPort)}/metrics`;
  }

  /** Polls `/readyz` until it answers 200. */
  async waitUntilReady(timeoutMs = 30_000): Promise<void> {
    const url = `${await this.baseUrl()}/readyz`;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const status = await fetch(url).then(
        (response) => response.status,
        () => 0,
      );
      if (status === 200) return;
      if (Date.now() > deadline) throw new Error(`${url} answered ${status}, not 200:\n${this.output}`);
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  /** Sends `signal` without waiting for the exit. */
  kill(signal: NodeJS.Signals): void {
    this.process.kill(signal);
  }

  /** Sends `signal` and waits for the exit; SIGKILLs after `timeoutMs`. */
  stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 20_000): Promise<ExitStatus> {
    return this.process.stop(signal, timeoutMs);
  }
}
