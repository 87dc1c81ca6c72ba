/**
 * bench/runs ndjson: one run of N items submitted as NDJSON (`application/x-ndjson`) to the built server,
 * timed end to end — from the first byte of POST /v1/scoring/runs until GET /v1/scoring/runs/{id} says
 * `completed` (polled every 100 ms) — with the upload alone (until its 202), then the results read back as
 * NDJSON (`Accept: application/x-ndjson`), and the server process's peak RSS (VmHWM from /proc, sampled
 * RSS beside it): it must not grow with N. The body is generated as it is sent, so the bench holds no more
 * of it than the server does.
 *
 * Goals (issue #29): a 1,000,000-item run at ≥ 30,000 items/s on SQLite and ≥ 15,000 on PostgreSQL.
 *
 * `--node-options="<flags>"` (with `=`: the flags start with `--`) starts the server with that NODE_OPTIONS,
 * e.g. the heap limits of docs/operating.md (Memory), to see what they bound.
 *
 * `--client` does what a user of the client package does instead of calling fetch itself: it writes the
 * N lines to a file first (not timed), uploads it with `uploadRunNdjson(client, path, { onProgress })`,
 * waits with `waitForRun(client, id, { onProgress })` (polling every 100 ms) and reads the results with
 * `readRunResults`, checking every item's index; the figures are the same.
 *
 *   npm run bench:ndjson -- [--items 20000] [--db sqlite|postgres|both] [--node-options="<flags>"] [--client]
 *   npm run bench:ndjson -- --items 1000000 --db both     # the documented goal's size
 */

import { once } from 'node:events';
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, readRunResults, uploadRunNdjson, waitForRun } from '@scenario-scoring/client';
import { benchArgs } from '../lib/bench-args.ts';
import { benchItemContext } from '../lib/bench-inputs.ts';
import { startBenchServer } from '../lib/bench-server.ts';
import { cpuTimes } from '../lib/load-report.ts';

const { values: args } = benchArgs(import.meta.url, {
  options: {
    items: { type: 'string', default: '20000' },
    db: { type: 'string', default: 'sqlite' },
    'node-options': { type: 'string' },
    client: { type: 'boolean', default: false },
  },
});
const ITEMS = Number(args.items);
const LINES_PER_CHUNK = 1000;

/** Lines `from` to `to` (excluded) of the body, each ending in a newline. */
function lines(from: number, to: number): string {
  const made: string[] = [];
  for (let next = from; next < to; next++) {
    const context = benchItemContext(next);
    made.push(`${JSON.stringify({ subject: `bench-ndjson-${next}`, context })}\n`);
  }
  return made.join('');
}

/** The body, a chunk of LINES_PER_CHUNK lines at a time, made as fetch pulls it. */
function body(items: number): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let next = 0;
  return new ReadableStream({
    pull(controller) {
      if (next >= items) {
        controller.close();
        return;
      }
      const end = Math.min(items, next + LINES_PER_CHUNK);
      controller.enqueue(encoder.encode(lines(next, end)));
      next = end;
    },
  });
}

/** The body written to a file of its own in a new temporary directory (the caller removes it). */
async function bodyFile(items: number): Promise<string> {
  const file = join(mkdtempSync(join(tmpdir(), 'bench-ndjson-')), 'portfolio.ndjson');
  const out = createWriteStream(file);
  for (let next = 0; next < items; next += LINES_PER_CHUNK) {
    if (!out.write(lines(next, Math.min(items, next + LINES_PER_CHUNK)))) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return file;
}

type RunView = {
  status: string;
  counts: { failed: number };
  progress: { items_per_second: number | null };
};

/** A run submitted, waited for and read back: by fetch itself, or through the client package (`--client`). */
interface Submission {
  /** Uploads the body; answers the run's id once the server has it all (202). */
  upload(): Promise<string>;
  /** Polls the run every 100 ms until it has ended. */
  wait(id: string): Promise<RunView>;
  /** Reads the results as NDJSON (gzip); answers how many items came back. */
  readBack(id: string): Promise<number>;
}

function fetchSubmission(url: string, authorization: string): Submission {
  return {
    async upload() {
      const created = await fetch(`${url}/v1/scoring/runs`, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/x-ndjson' },
        body: body(ITEMS),
        duplex: 'half',
      } as RequestInit);
      if (created.status !== 202) throw new Error(`POST: ${created.status} ${await created.text()}`);
      return ((await created.json()) as { id: string }).id;
    },
    async wait(id) {
      for (;;) {
        const run = (await (
          await fetch(`${url}/v1/scoring/runs/${id}`, { headers: { authorization } })
        ).json()) as RunView;
        if (run.status === 'completed' || run.status === 'failed') return run;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    async readBack(id) {
      const results = await fetch(`${url}/v1/scoring/runs/${id}/results`, {
        headers: { authorization, accept: 'application/x-ndjson', 'accept-encoding': 'gzip' },
      });
      let count = 0;
      for await (const chunk of results.body as unknown as AsyncIterable<Uint8Array>)
        for (const byte of chunk) if (byte === 0x0a) count++;
      return count;
    },
  };
}

function clientSubmission(url: string, authorization: string, file: string): Submission {
  const client = createClient({ baseUrl: url, apiKey: authorization.replace(/^Bearer /, '') });
  let uploadedLines = 0;
  let polls = 0;
  return {
    async upload() {
      const { data, error } = await uploadRunNdjson(client, file, {
        onProgress: ({ lines: sent }) => {
          uploadedLines = sent;
        },
      });
      if (!data) throw new Error(`upload: ${error?.code}: ${error?.detail}`);
      if (uploadedLines !== ITEMS) throw new Error(`upload progress said ${uploadedLines} lines of ${ITEMS}`);
      return data.id;
    },
    async wait(id) {
      const { data, error } = await waitForRun(client, id, {
        initialDelayMs: 100,
        maxDelayMs: 100,
        random: () => 0.5,
        onProgress: () => {
          polls += 1;
        },
      });
      if (!data) throw new Error(`wait: ${error?.code}: ${error?.detail}`);
      if (polls === 0) throw new Error('waitForRun never called onProgress');
      return data as RunView;
    },
    async readBack(id) {
      let count = 0;
      for await (const item of readRunResults(client, id)) {
        if (item.index !== count) throw new Error(`result ${count} came back as item ${item.index}`);
        count += 1;
      }
      return count;
    },
  };
}

/** A process's resident set and its peak so far, in MiB, from /proc; NaN elsewhere. */
function memory(pid: number | undefined): { rss: number; peak: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1]) / 1024;
    return { rss: kib('VmRSS'), peak: kib('VmHWM') };
  } catch {
    return { rss: Number.NaN, peak: Number.NaN };
  }
}

async function benchDatabase(db: string, file: string | undefined): Promise<void> {
  const nodeOptions = args['node-options'];
  const server = await startBenchServer(
    db,
    'bench-ndjson',
    nodeOptions === undefined ? {} : { NODE_OPTIONS: nodeOptions },
  );
  try {
    const pid = server.process.pid;
    const { authorization } = server.headers as { authorization: string };
    const submission =
      file === undefined
        ? fetchSubmission(server.url, authorization)
        : clientSubmission(server.url, authorization, file);
    const atStart = memory(pid);
    let sampledPeak = atStart.rss;
    // The sampled peak of each phase, so a growth can be told apart: the upload, the scoring, the read.
    const phasePeaks = { upload: atStart.rss, scoring: 0, 'read back': 0 };
    let phase: keyof typeof phasePeaks = 'upload';
    const sampler = setInterval(() => {
      const { rss } = memory(pid);
      sampledPeak = Math.max(sampledPeak, rss);
      phasePeaks[phase] = Math.max(phasePeaks[phase], rss);
    }, 100);
    const cpuBefore = cpuTimes(pid)?.all ?? Number.NaN;
    const started = performance.now();
    const id = await submission.upload();
    const uploadedMs = performance.now() - started;
    phase = 'scoring';
    const run = await submission.wait(id);
    const doneMs = performance.now() - started;
    const cpuUsPerItem = ((cpuTimes(pid)?.all ?? Number.NaN) - cpuBefore) / ITEMS;
    const readStarted = performance.now();
    phase = 'read back';
    const lines = await submission.readBack(id);
    const readMs = performance.now() - readStarted;
    clearInterval(sampler);
    const end = memory(pid);
    if (run.status !== 'completed' || lines !== ITEMS || run.counts.failed !== 0)
      throw new Error(`run ${id} ended ${run.status} with ${lines} result lines: ${JSON.stringify(run)}`);
    console.log(
      [
        `bench/runs ndjson (${db}), ${ITEMS} items${file === undefined ? '' : ' from a file through the client package'}, Node ${process.version}${nodeOptions === undefined ? '' : `, server NODE_OPTIONS=${nodeOptions}`}:`,
        `  end to end ${Math.round((ITEMS / doneMs) * 1000)} items/s (${(doneMs / 1000).toFixed(1)} s; the server's own rate ${Math.round(run.progress.items_per_second ?? 0)} items/s; server CPU ${cpuUsPerItem.toFixed(0)} µs/item, all threads, upload included)`,
        `  upload alone ${Math.round((ITEMS / uploadedMs) * 1000)} lines/s (${(uploadedMs / 1000).toFixed(1)} s)`,
        `  results read back as NDJSON (gzip) ${Math.round((ITEMS / readMs) * 1000)} items/s`,
        `  server RSS: ${atStart.rss.toFixed(0)} MiB at start, peak ${end.peak.toFixed(0)} MiB (VmHWM; sampled ${sampledPeak.toFixed(0)} MiB), ${end.rss.toFixed(0)} MiB at the end; sampled peak by phase: ${Object.entries(
          phasePeaks,
        )
          .map(([name, mib]) => `${name} ${mib.toFixed(0)} MiB`)
          .join(', ')}`,
      ].join('\n'),
    );
  } finally {
    await server.stop();
  }
}

const file = args.client ? await bodyFile(ITEMS) : undefined;
try {
  for (const db of args.db === 'both' ? ['sqlite', 'postgres'] : [args.db as string])
    await benchDatabase(db, file);
} finally {
  if (file !== undefined) rmSync(join(file, '..'), { recursive: true, force: true });
}
