import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startNodeProcess } from './child-process.js';
import { freePort } from './free-port.js';

const STARTUP_TIMEOUT_MS = 45_000;
const STOP_TIMEOUT_MS = 5_000;
/** Preloaded into Prism: it exits when our stdin pipe to it closes, so a killed test leaves no orphan. */
const WATCHDOG = fileURLToPath(new URL('../exit-with-parent.cjs', import.meta.url));

/** The Prism CLI's entry script, run with this Node so that the child we hold is Prism itself. */
export function prismCli(): string {
  const manifest = createRequire(import.meta.url).resolve('@stoplight/prism-cli/package.json');
  const { bin } = JSON.parse(readFileSync(manifest, 'utf8')) as { bin: { prism: string } };
  return join(dirname(manifest), bin.prism);
}

/** A private copy of a file, and how to remove it. */
export interface FileSnapshot {
  path: string;
  remove(): void;
}

/**
 * Copies `path` into a new temporary folder. Prism watches its document and restarts when it changes:
 * serving a copy keeps a rebuild of openapi/dist during a run from restarting it under the tests.
 */
export function snapshotFile(path: string): FileSnapshot {
  const dir = mkdtempSync(join(tmpdir(), 'ss-snapshot-'));
  const copy = join(dir, basename(path));
  copyFileSync(path, copy);
  return { path: copy, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A running Prism mock server. */
export interface PrismServer {
  baseUrl: string;
  /** The last of what Prism printed, for failure messages. */
  output(): string;
  /** Stops Prism: SIGTERM, then SIGKILL if it does not exit in time. */
  stop(): Promise<void>;
}

/** The mock's entry script: Prism behind the front that answers invalid requests like the server. */
export const MOCK_SERVER = fileURLToPath(new URL('../bin/mock-server.mjs', import.meta.url));

/**
 * Starts the mock (`bin/mock-server.mjs`: `prism mock` for `document` behind its front) on a free port of
 * 127.0.0.1, and waits until it listens.
 */
export async function startPrism(document: string, options: { cwd?: string } = {}): Promise<PrismServer> {
  const port = await freePort();
  const prism = startNodeProcess(
    // One process (no multiprocess), so that stopping the child stops Prism.
    ['--require', WATCHDOG, MOCK_SERVER, '--host', '127.0.0.1', '--port', String(port), document],
    {
      cwd: options.cwd ?? process.cwd(),
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
    },
  );
  const stop = async () => {
    await prism.stop('SIGTERM', STOP_TIMEOUT_MS);
  };
  try {
    await prism.waitForOutput(/Mock listening on http:\/\/127\.0\.0\.1:\d+/, STARTUP_TIMEOUT_MS);
  } catch (error) {
    await stop();
    throw error;
  }
  return { baseUrl: `http://127.0.0.1:${port}`, output: prism.output, stop };
}
