/** Starting and stopping the processes a benchmark measures, each on a free loopback port. */
import { setTimeout as sleep } from 'node:timers/promises';
import { startNodeProcess, type WatchedProcess } from '@scenario-scoring/testkit';

/** Longer than the server's default SHUTDOWN_GRACE (10 s), so that a draining server is not cut. */
const STOP_TIMEOUT_MS = 20_000;

/** A Node process that serves HTTP on `url` (testkit's WatchedProcess, ready when `url` answers). */
export interface RunningProcess {
  url: string;
  pid: number | undefined;
  /** The last of what it printed on stdout and stderr, interleaved. */
  output: () => string;
  /** Milliseconds from spawning it to its first 2xx answer on the ready path (polled every `pollMs`). */
  readyMs: number;
  /** How many lines it printed on stdout and stderr since it started. */
  lines: () => number;
  /** Sends SIGTERM (SIGKILL if it has not exited in time) and resolves with its exit code. */
  stop: () => Promise<number | null>;
}

/**
 * Starts `node <args>` with testkit's process starter (this process's environment plus `env`) and waits
 * until `readyUrl` answers 2xx, so measuring starts on a warm, listening process. Fails with the process's
 * output when it exits or is not ready in time.
 */
export async function startProcess(
  args: string[],
  options: {
    env?: NodeJS.ProcessEnv;
    cwd?: string;
    url: string;
    readyPath?: string;
    timeoutMs?: number;
    /** How often readiness is asked; small to time a cold start, 100 ms by default. */
    pollMs?: number;
    /** How much of its output to keep (its tail), for `output()`: testkit's default (16,000 characters) when absent. */
    keepChars?: number;
  },
): Promise<RunningProcess> {
  const spawnedAt = performance.now();
  const child: WatchedProcess = startNodeProcess(args, {
    cwd: options.cwd ?? process.cwd(),
    env: { ...process.env, ...options.env },
    ...(options.keepChars !== undefined && { keepChars: options.keepChars }),
  });
  const stop = async () => (await child.stop('SIGTERM', STOP_TIMEOUT_MS)).code;
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  while (Date.now() < deadline) {
    if (child.hasExited()) throw new Error(`node ${args.join(' ')} exited early:\n${child.output()}`);
    const ready = await fetch(options.url + (options.readyPath ?? '/')).then(
      (response) => response.ok,
      () => false,
    );
    if (ready) {
      const readyMs = performance.now() - spawnedAt;
      return { url: options.url, pid: child.pid, output: child.output, readyMs, lines: child.lines, stop };
    }
    await sleep(options.pollMs ?? 100);
  }
  await stop();
  throw new Error(`node ${args.join(' ')} was not ready at ${options.url} in time:\n${child.output()}`);
}
