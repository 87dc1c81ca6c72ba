/**
 * The built server as the benchmarks run it: a fresh DATA_DIR (and a fresh PostgreSQL database with
 * `--db postgres`), an API key made with the built CLI, and the server on a free loopback port, ready.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { freePort } from '@scenario-scoring/testkit';
import { type RunningProcess, startProcess } from './child-process.ts';
import { freshPostgres } from './fresh-postgres.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
/** The built server's entry point. */
const SERVER_MAIN = join(ROOT, 'apps/server/dist/main.js');
/** The built CLI. */
const SERVER_CLI = join(ROOT, 'apps/server/dist/cli.js');

/** Where a benchmark's server keeps its data; `drop()` removes it. */
export interface BenchDatabase {
  /** DATA_DIR, and with PostgreSQL DATABASE_URL, SECRETS_KEY and LOG_SIGNING_KEY (or SECRETS_KEY whenever one is given). */
  env: Record<string, string>;
  drop(): Promise<void>;
}

/** A fresh DATA_DIR named after `name`, and a fresh PostgreSQL database when `db` is `postgres`. */
export async function freshBenchDatabase(
  db: string,
  name: string,
  secretsKey?: string,
): Promise<BenchDatabase> {
  const dataDir = mkdtempSync(join(tmpdir(), `ss-${name}-`));
  const postgres = db === 'postgres' ? await freshPostgres() : undefined;
  const key = secretsKey ?? (postgres ? randomBytes(32).toString('base64') : undefined);
  return {
    env: {
      DATA_DIR: dataDir,
      ...(postgres && { DATABASE_URL: postgres.url }),
      ...(key !== undefined && { SECRETS_KEY: key }),
      ...(postgres && { LOG_SIGNING_KEY: randomBytes(32).toString('base64') }),
    },
    async drop() {
      await postgres?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * A copy of `database` (no server may be running on it): its DATA_DIR copied, and on PostgreSQL a database
 * made from it as a template. So that two builds whose migrations differ each run on data of their own.
 */
export async function copyBenchDatabase(database: BenchDatabase, name: string): Promise<BenchDatabase> {
  const dataDir = mkdtempSync(join(tmpdir(), `ss-${name}-`));
  cpSync(database.env.DATA_DIR as string, dataDir, { recursive: true });
  const source = database.env.DATABASE_URL;
  const postgres = source === undefined ? undefined : await freshPostgres(new URL(source).pathname.slice(1));
  return {
    env: { ...database.env, DATA_DIR: dataDir, ...(postgres && { DATABASE_URL: postgres.url }) },
    async drop() {
      await postgres?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The server's environment under load: production mode, no rate limit, on `database`. */
export function loadEnv(database: BenchDatabase): Record<string, string> {
  return { NODE_ENV: 'production', RATE_LIMIT_PER_SECOND: '0', ...database.env };
}

/** Creates an API key for `tenant` with the built CLI (on the database `env` names); returns it. */
export function createApiKey(env: Record<string, string>, tenant: string, cli = SERVER_CLI): string {
  const printed = execFileSync(process.execPath, [cli, 'create-key', '--tenant', tenant], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  return printed.trim().split('\n').at(-1) as string;
}

/** A benchmark's running server: where it listens, the headers that send its key, and its process. */
export interface BenchServer {
  url: string;
  headers: Record<string, string>;
  /** The server's process: its pid and the lines it printed. */
  process: RunningProcess;
  /** Its database: DATA_DIR, and DATABASE_URL on PostgreSQL (see BenchDatabase). */
  env: Record<string, string>;
  /** Stops the server (SIGTERM) and drops its database; resolves with the server's exit code. */
  stop(): Promise<number | null>;
}

/**
 * Creates a key for tenant `bench`, starts the built server on a free port, with `extraEnv` on top of
 * the load environment (e.g. METRICS_PORT), and waits until /readyz answers 200. `main` may name another
 * build's `dist/main.js` (its `cli.js` beside it), to compare two builds in one run.
 */
export async function startBenchServer(
  db: string,
  name: string,
  extraEnv: Record<string, string> = {},
  main = SERVER_MAIN,
): Promise<BenchServer> {
  const database = await freshBenchDatabase(db, name);
  try {
    const env = { ...loadEnv(database), ...extraEnv };
    const apiKey = createApiKey(env, 'bench', join(dirname(main), 'cli.js'));
    const server = await startServerOn(database, apiKey, extraEnv, main);
    return {
      ...server,
      env: database.env,
      async stop() {
        const code = await server.stop();
        await database.drop();
        return code;
      },
    };
  } catch (error) {
    await database.drop();
    throw error;
  }
}

/**
 * Starts the built server on an existing `database` (already holding `apiKey`), on a free port (or
 * `extraEnv.PORT`), with `extraEnv` on top of the load environment, and waits until /readyz answers 200.
 * `stop()` stops the server and leaves the database in place. `keepChars`: how much of its output
 * `process.output()` keeps (16,000 characters by default; more to read its request lines).
 */
export async function startServerOn(
  database: BenchDatabase,
  apiKey: string,
  extraEnv: Record<string, string> = {},
  main = SERVER_MAIN,
  keepChars?: number,
): Promise<BenchServer> {
  const env = { ...loadEnv(database), ...extraEnv };
  const port = extraEnv.PORT === undefined ? await freePort() : Number(extraEnv.PORT);
  const server = await startProcess([main], {
    env: { ...env, PORT: String(port), HOST: '127.0.0.1' },
    url: `http://127.0.0.1:${port}`,
    readyPath: '/readyz',
    pollMs: 5,
    timeoutMs: 120_000,
    ...(keepChars !== undefined && { keepChars }),
  });
  return {
    url: server.url,
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    process: server,
    env: database.env,
    stop: () => server.stop(),
  };
}
