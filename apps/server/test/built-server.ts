import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The server package's folder. */
export const SERVER_DIR = join(dirname(fileURLToPath(import.meta.url)), '..');
/** The built entry point, as `npm start` runs it. */
export const SERVER_MAIN = join(SERVER_DIR, 'dist', 'main.js');

const FIRST_KEY_LINE = /Created an API key for tenant "default" \(shown once\): (sk_\w{40})\n/;
const LISTENING_LINE = /scenario-scoring listening on http:\/\/localhost:(\d+) — docs at/;
const POLL_MS = 25;

/** Throws unless the server is built (the tests run the built output, as a deployment does). */
export function requireBuiltServer(main = SERVER_MAIN): void {
  if (!existsSync(main)) {
    throw new Error(`${main} is missing: run "npx turbo run build --filter=@scenario-scoring/server" first`);
  }
}

/** A built server process started with exactly `env` (plus PATH), its output kept for assertions. */
export class BuiltServer {
  readonly child: ChildProcess;
  output = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(env: Record<string, string>, main = SERVER_MAIN) {
    this.child = spawn(process.execPath, [main], {
      cwd: dirname(main),
      env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production', PORT: '0', HOST: '127.0.0.1', ...env },
    });
    const keep = (chunk: Buffer) => {
      this.output += chunk.toString('utf8');
    };
    this.child.stdout?.on('data', keep);
    this.child.stderr?.on('data', keep);
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => resolve({ code, signal })),
    );
  }

  /** Resolves with the first match of `pattern` in the output; rejects when the process exits first. */
  async waitFor(pattern: RegExp, timeoutMs = 30_000): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const match = this.output.match(pattern);
      if (match) return match;
      if (this.child.exitCode !== null || Date.now() > deadline) {
        throw new Error(`no ${pattern} in the output of the server:\n${this.output}`);
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
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

  /** Sends `signal` and waits for the exit; SIGKILLs after `timeoutMs`. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 20_000) {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}
