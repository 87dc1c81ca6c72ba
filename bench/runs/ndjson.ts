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
 *   npm run bench:ndjson -- [--items 20000] [--db sqlite|postgres|both] [--node-options="<flags>"]
 *   npm run bench:ndjson -- --items 1000000 --db both     # the documented goal's size
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { benchContext } from '../lib/bench-inputs.ts';
import { startBenchServer } from '../lib/bench-server.ts';
import { cpuTimes } from '../lib/load-report.ts';

const { values: args } = parseArgs({
  options: {
    items: { type: 'string', default: '20000' },
    db: { type: 'string', default: 'sqlite' },
    'node-options': { type: 'string' },
  },
});
const ITEMS = Number(args.items);
const JURISDICTIONS = ['DE', 'US', 'US-CA', 'FR'];
const LINES_PER_CHUNK = 1000;

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
      const lines: string[] = [];
      for (const end = Math.min(items, next + LINES_PER_CHUNK); next < end; next++) {
        const context = benchContext(next, JURISDICTIONS[next % 4] as string);
        lines.push(JSON.stringify({ subject: `bench-ndjson-${next}`, context }));
      }
      controller.enqueue(encoder.encode(`${lines.join('\n')}\n`));
    },
  });
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

async function benchDatabase(db: string): Promise<void> {
  const nodeOptions = args['node-options'];
  const server = await startBenchServer(
    db,
    'bench-ndjson',
    nodeOptions === undefined ? {} : { NODE_OPTIONS: nodeOptions },
  );
  try {
    const pid = server.process.pid;
    const { authorization } = server.headers as { authorization: string };
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
    const created = await fetch(`${server.url}/v1/scoring/runs`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/x-ndjson' },
      body: body(ITEMS),
      duplex: 'half',
    } as RequestInit);
    if (created.status !== 202) throw new Error(`POST: ${created.status} ${await created.text()}`);
    const uploadedMs = performance.now() - started;
    phase = 'scoring';
    const { id } = (await created.json()) as { id: string };
    type RunView = {
      status: string;
      counts: { failed: number };
      progress: { items_per_second: number | null };
    };
    let run: RunView;
    for (;;) {
      run = (await (
        await fetch(`${server.url}/v1/scoring/runs/${id}`, { headers: { authorization } })
      ).json()) as RunView;
      if (run.status === 'completed' || run.status === 'failed') break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const doneMs = performance.now() - started;
    const cpuUsPerItem = ((cpuTimes(pid)?.all ?? Number.NaN) - cpuBefore) / ITEMS;
    const readStarted = performance.now();
    phase = 'read back';
    const results = await fetch(`${server.url}/v1/scoring/runs/${id}/results`, {
      headers: { authorization, accept: 'application/x-ndjson', 'accept-encoding': 'gzip' },
    });
    let lines = 0;
    for await (const chunk of results.body as unknown as AsyncIterable<Uint8Array>)
      for (const byte of chunk) if (byte === 0x0a) lines++;
    const readMs = performance.now() - readStarted;
    clearInterval(sampler);
    const end = memory(pid);
    if (run.status !== 'completed' || lines !== ITEMS || run.counts.failed !== 0)
      throw new Error(`run ${id} ended ${run.status} with ${lines} result lines: ${JSON.stringify(run)}`);
    console.log(
      [
        `bench/runs ndjson (${db}), ${ITEMS} items, Node ${process.version}${nodeOptions === undefined ? '' : `, server NODE_OPTIONS=${nodeOptions}`}:`,
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

for (const db of args.db === 'both' ? ['sqlite', 'postgres'] : [args.db as string]) await benchDatabase(db);
