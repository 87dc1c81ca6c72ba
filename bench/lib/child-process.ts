/** Starting and stopping the processes a benchmark measures, each on a free loopback port. */
import { type ChildProcess, spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';

/** How much of a child's output is kept, for failure messages: the server logs a line per request. */
const OUTPUT_TAIL_CHARS = 16_000;
/** Longer than the server's default SHUTDOWN_GRACE (10 s), so that a draining server is not cut. */
const STOP_TIMEOUT_MS = 20_000;
const NEWLINE = 10;

/** A child process that serves HTTP on `url`. */
export interface RunningProcess {
  url: string;
  child: ChildProcess;
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
 * Spawns `command` and waits until `readyUrl` answers 2xx, so measuring starts on a warm, listening
 * process. Fails with the process's output when it exits or is not ready in time.
 */
export async function startProcess(
  command: string,
  args: string[],
  options: {
    env?: NodeJS.ProcessEnv;
    cwd?: string;
    url: string;
    readyPath?: string;
    timeoutMs?: number;
    /** How often readiness is asked; small to time a cold start, 100 ms by default. */
    pollMs?: number;
  },
): Promise<RunningProcess> {
  const spawnedAt = performance.now();
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let lines = 0;
  const read = (chunk: Buffer) => {
    for (const byte of chunk) if (byte === NEWLINE) lines++;
    output += chunk.toString('utf8');
    if (output.length > OUTPUT_TAIL_CHARS) output = output.slice(-OUTPUT_TAIL_CHARS);
  };
  child.stdout?.on('data', read);
  child.stderr?.on('data', read);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
    }
    return child.exitCode;
  };
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${command} exited early:\n${output}`);
    const ready = await fetch(options.url + (options.readyPath ?? '/')).then(
      (response) => response.ok,
      () => false,
    );
    if (ready) {
      const readyMs = performance.now() - spawnedAt;
      return { url: options.url, child, output: () => output, readyMs, lines: () => lines, stop };
    }
    await sleep(options.pollMs ?? 100);
  }
  await stop();
  throw new Error(`${command} was not ready at ${options.url} in time:\n${output}`);
}
