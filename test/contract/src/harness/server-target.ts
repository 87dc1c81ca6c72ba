import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runNodeProcess, startNodeProcess } from '@scenario-scoring/testkit';
import type { Target, TargetOptions } from './target-types.js';
import { REPO_ROOT, SERVER_CLI, SERVER_MAIN } from './workspace-paths.js';

const STARTUP_TIMEOUT_MS = 30_000;
/** The server waits up to 10 s for requests in flight; a little more before SIGKILL. */
const STOP_TIMEOUT_MS = 15_000;
const FIRST_KEY_LINE = /Created an API key for tenant "default" \(shown once\): (sk_[0-9A-Za-z]{40})\b/;
const LISTENING_LINE =
  /scenario-scoring listening on http:\/\/localhost:(\d+) — docs at http:\/\/localhost:\1\/docs\n/;
const OTHER_TENANT = 'contract-other';

/**
 * Starts the built server as a user does (`npm start` runs `node apps/server/dist/main.js` from the
 * repository root) on a fresh SQLite DATA_DIR, reads the first key and the port it prints, and creates a
 * second tenant's key with the CLI while it runs. `stop()` sends SIGTERM and throws unless it exits 0.
 */
export async function startServerTarget(options: TargetOptions = {}): Promise<Target> {
  const dataDir = mkdtempSync(join(tmpdir(), 'contract-server-'));
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    PORT: '0',
    HOST: '127.0.0.1',
    NODE_ENV: 'production',
    DATA_DIR: dataDir,
    // Webhooks are registered to receivers on this machine, as in local development.
    WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
    // Erasures start at once (ERASURE_SETTLE, 30 s in production, lets scorings in flight commit first):
    // the suite erases only subjects whose scorings were answered before it asked.
    ERASURE_SETTLE: '0s',
    ...(options.rateLimitPerSecond !== undefined && {
      RATE_LIMIT_PER_SECOND: String(options.rateLimitPerSecond),
    }),
  };
  const server = startNodeProcess([SERVER_MAIN], { cwd: REPO_ROOT, env });
  const stop = async () => {
    const status = await server.stop('SIGTERM', STOP_TIMEOUT_MS);
    rmSync(dataDir, { recursive: true, force: true });
    if (status.code !== 0) {
      throw new Error(
        `the server exited with ${JSON.stringify(status)} on SIGTERM, not 0:\n${server.output()}`,
      );
    }
  };
  try {
    const [, apiKey = ''] = await server.waitForOutput(FIRST_KEY_LINE, STARTUP_TIMEOUT_MS);
    const [, port] = await server.waitForOutput(LISTENING_LINE, STARTUP_TIMEOUT_MS);
    const created = await runNodeProcess([SERVER_CLI, 'create-key', '--tenant', OTHER_TENANT], {
      cwd: REPO_ROOT,
      env,
    });
    const otherTenantKey = created.stdout.match(/^(sk_[0-9A-Za-z]{40})\n$/)?.[1];
    if (created.code !== 0 || otherTenantKey === undefined) {
      throw new Error(`create-key failed (${created.code}):\n${created.stdout}${created.stderr}`);
    }
    // It printed localhost, but it listens on HOST only: 127.0.0.1, not whatever localhost resolves to.
    return { kind: 'server', baseUrl: `http://127.0.0.1:${port}`, apiKey, otherTenantKey, stop };
  } catch (error) {
    await server.stop('SIGKILL', STOP_TIMEOUT_MS);
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
}
