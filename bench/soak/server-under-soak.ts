/** The built server started for a soak: its output counted and dropped, its memory read from /proc. */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { createApiKey, SERVER_MAIN } from '../lib/bench-server.ts';

/** A running server whose resident memory can be sampled. */
export interface ServerUnderSoak {
  readonly url: string;
  readonly apiKey: string;
  /** Lines the server printed (one per request: the request log). */
  lines(): number;
  /** Resident set size of the server process in bytes. */
  rssBytes(): number;
  /** The V8 heap in use, in bytes, from the server's own /metrics (tells a heap leak from native growth). */
  heapUsedBytes(): Promise<number>;
  stop(): Promise<number | null>;
}

/** Creates a key with the built CLI, starts the built server on `port` and waits until /readyz answers 200. */
export async function startServerUnderSoak(options: {
  env: Record<string, string>;
  port: number;
  metricsPort: number;
}): Promise<ServerUnderSoak> {
  const env = {
    ...options.env,
    PORT: String(options.port),
    HOST: '127.0.0.1',
    METRICS_PORT: String(options.metricsPort),
    METRICS_HOST: '127.0.0.1',
  };
  const apiKey = createApiKey(env, 'soak');
  const child: ChildProcess = spawn(process.execPath, [SERVER_MAIN], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // The request log is one line per request: count it, keep only the tail for a failure message.
  let lines = 0;
  let tail = '';
  const read = (chunk: Buffer) => {
    for (const byte of chunk) if (byte === 10) lines++;
    tail = (tail + chunk.toString('utf8')).slice(-4000);
  };
  child.stdout?.on('data', read);
  child.stderr?.on('data', read);
  const url = `http://127.0.0.1:${options.port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the server exited early:\n${tail}`);
    const ok = await fetch(`${url}/readyz`).then(
      (response) => response.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) throw new Error(`the server did not become ready:\n${tail}`);
    await sleep(100);
  }
  const pid = child.pid ?? 0;
  return {
    url,
    apiKey,
    lines: () => lines,
    rssBytes: () => {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const kib = Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1] ?? Number.NaN);
      return kib * 1024;
    },
    async heapUsedBytes() {
      const text = await (await fetch(`http://127.0.0.1:${options.metricsPort}/metrics`)).text();
      return Number(/^nodejs_heap_size_used_bytes (\S+)$/m.exec(text)?.[1] ?? Number.NaN);
    },
    async stop() {
      if (child.exitCode !== null) return child.exitCode;
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}
