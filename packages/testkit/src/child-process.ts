import { type ChildProcess, spawn } from 'node:child_process';

/** How much of a child's output is kept by default, for failure messages. */
const OUTPUT_TAIL_CHARS = 16_000;
const POLL_INTERVAL_MS = 25;
const NEWLINE = 10;

/** How a child process ended. */
export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A child process whose output is read (so its pipes never fill up) and kept for assertions. */
export interface WatchedProcess {
  readonly pid: number | undefined;
  /** The last of what it printed on stdout and stderr, interleaved. */
  output(): string;
  /** How many lines it printed on stdout and stderr since it started. */
  lines(): number;
  /** Resolves with the first match of `pattern` in the output; rejects if the child exits or time runs out. */
  waitForOutput(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray>;
  /** Sends `signal` and waits for the exit; SIGKILLs the child if it has not exited after `timeoutMs`. */
  stop(signal: NodeJS.Signals, timeoutMs: number): Promise<ExitStatus>;
  /** Sends `signal` without waiting (a test that watches what the child does while it stops). */
  kill(signal: NodeJS.Signals): void;
  /** Whether the child has exited (or was killed by a signal). */
  hasExited(): boolean;
  readonly exited: Promise<ExitStatus>;
}

// Children still running when the test process exits are killed, so that a crash leaves no orphan.
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * Starts `node <args>` with exactly `env` (nothing inherited), reading its output. `keepChars` bounds the
 * output kept (its tail); `Infinity` keeps all of it, for a test that parses every line.
 */
export function startNodeProcess(
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; keepChars?: number },
): WatchedProcess {
  const keepChars = options.keepChars ?? OUTPUT_TAIL_CHARS;
  const child = spawn(process.execPath, args, {
    cwd: options.cwd,
    env: options.env,
    // A pipe on stdin lets a child that preloads a watchdog notice our death (see prism.ts).
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  running.add(child);
  let tail = '';
  let lines = 0;
  const keep = (chunk: Buffer) => {
    for (const byte of chunk) if (byte === NEWLINE) lines++;
    tail += chunk.toString('utf8');
    if (tail.length > keepChars) tail = tail.slice(-keepChars);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<ExitStatus>((resolve) => {
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    });
    child.once('error', () => {
      running.delete(child);
      resolve({ code: null, signal: null });
    });
  });
  const hasExited = () => child.exitCode !== null || child.signalCode !== null;

  return {
    pid: child.pid,
    exited,
    output: () => tail,
    lines: () => lines,
    hasExited,
    kill: (signal) => {
      if (!hasExited()) child.kill(signal);
    },
    async waitForOutput(pattern, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const match = tail.match(pattern);
        if (match) return match;
        if (hasExited()) throw new Error(`the process exited before printing ${pattern}:\n${tail}`);
        if (Date.now() > deadline) throw new Error(`no ${pattern} within ${timeoutMs} ms in:\n${tail}`);
        await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
      }
    },
    async stop(signal, timeoutMs) {
      if (!hasExited()) child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** Runs `node <args>` to completion and returns its exit code and output. */
export function runNodeProcess(
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: options.cwd, env: options.env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}
