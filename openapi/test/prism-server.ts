import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const STARTUP_TIMEOUT_MS = 30_000;
const POLL_INTERVAL_MS = 100;
const STOP_TIMEOUT_MS = 5_000;
/** How much of Prism's output to keep for error messages. */
const OUTPUT_TAIL_CHARS = 8_000;

const WATCHDOG = fileURLToPath(new URL('./exit-with-parent.cjs', import.meta.url));

/** The Prism CLI's entry script, run with this Node so that killing the child kills Prism itself. */
function prismCli(): string {
  const manifest = createRequire(import.meta.url).resolve('@stoplight/prism-cli/package.json');
  const { bin } = JSON.parse(readFileSync(manifest, 'utf8')) as { bin: { prism: string } };
  return join(dirname(manifest), bin.prism);
}

/** A running Prism mock server. */
export interface PrismServer {
  baseUrl: string;
  /** The last lines Prism printed, for failure messages. */
  output(): string;
  /** Stops Prism: SIGTERM, then SIGKILL if it does not exit in time. */
  stop(): Promise<void>;
}

/** A TCP port that was free a moment ago, found by letting the OS pick one. */
export function freePort(): Promise<number> {
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

function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

function waitForExit(child: ChildProcess, timeoutMs: number): Promise<boolean> {
  if (hasExited(child)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), timeoutMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/** Starts `prism mock` on a free port of 127.0.0.1 for `document`, and waits until it answers HTTP. */
export async function startPrism(document: string): Promise<PrismServer> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const args = ['--require', WATCHDOG, prismCli(), 'mock', '--host', '127.0.0.1', '--port', String(port)];
  const child = spawn(process.execPath, [...args, document], { stdio: ['pipe', 'pipe', 'pipe'] });
  // Prism logs every request: reading its output keeps the pipes from filling up and blocking it.
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-OUTPUT_TAIL_CHARS);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);

  const server: PrismServer = {
    baseUrl,
    output: () => tail,
    async stop() {
      if (hasExited(child)) return;
      child.kill('SIGTERM');
      if (!(await waitForExit(child, STOP_TIMEOUT_MS))) {
        child.kill('SIGKILL');
        await waitForExit(child, STOP_TIMEOUT_MS);
      }
    },
  };

  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  for (;;) {
    if (hasExited(child)) throw new Error(`Prism exited before listening:\n${tail}`);
    try {
      // Any HTTP answer, even a 404, means Prism listens.
      await fetch(baseUrl, { signal: AbortSignal.timeout(1_000) });
      return server;
    } catch {
      if (Date.now() > deadline) {
        await server.stop();
        throw new Error(`Prism did not listen on ${baseUrl} within ${STARTUP_TIMEOUT_MS} ms:\n${tail}`);
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
    }
  }
}
