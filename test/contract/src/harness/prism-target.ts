import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startNodeProcess } from './child-process.js';
import type { Target } from './targets.js';
import { BUNDLE_YAML, prismCli, REPO_ROOT } from './workspace-paths.js';

const STARTUP_TIMEOUT_MS = 45_000;
const STOP_TIMEOUT_MS = 5_000;
const WATCHDOG = fileURLToPath(new URL('./exit-with-parent.cjs', import.meta.url));
const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A key of the documented shape, `sk_` and 40 base62 characters: the mock accepts any bearer token. */
function mockApiKey(): string {
  return `sk_${Array.from(randomBytes(40), (byte) => BASE62[byte % 62]).join('')}`;
}

/** A TCP port of 127.0.0.1 that was free a moment ago. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/** Starts `prism mock` on a free port, serving a private copy of the contract bundle. */
export async function startPrismTarget(): Promise<Target> {
  // Prism watches its document and restarts when it changes: a copy keeps a rebuild of openapi/dist
  // during the run from restarting it under the tests.
  const snapshotDir = mkdtempSync(join(tmpdir(), 'contract-mock-'));
  const document = join(snapshotDir, 'openapi.yaml');
  copyFileSync(BUNDLE_YAML, document);
  const port = await freePort();
  const prism = startNodeProcess(
    [
      '--require',
      WATCHDOG,
      prismCli(),
      'mock',
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      // One process, so that stopping the child stops Prism.
      '--no-multiprocess',
      document,
    ],
    { cwd: REPO_ROOT, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' } },
  );
  const cleanUp = async () => {
    await prism.stop('SIGTERM', STOP_TIMEOUT_MS);
    rmSync(snapshotDir, { recursive: true, force: true });
  };
  try {
    await prism.waitForOutput(/Prism is listening on http:\/\/127\.0\.0\.1:\d+/, STARTUP_TIMEOUT_MS);
  } catch (error) {
    await cleanUp();
    throw error;
  }
  return {
    kind: 'mock',
    baseUrl: `http://127.0.0.1:${port}`,
    apiKey: mockApiKey(),
    otherTenantKey: mockApiKey(),
    stop: cleanUp,
  };
}
