/**
 * bench/runs: items scored per second end to end by batch runs on the real server — one 1,000-item run,
 * and ten 1,000-item runs submitted at once — next to the synchronous endpoint's rate (autocannon on
 * POST /v1/scoring/score) in the same process, alternated over several rounds. End to end means from
 * sending POST /v1/scoring/runs until GET /v1/scoring/runs/{id} says `completed` (polled every ms); the
 * server's own span (created_at → completed_at) is printed beside it, and for the concurrent runs the server
 * process's CPU time per item (all its threads, from /proc): steadier than items/s on a busy machine.
 *
 * With `--db both` (the default) it measures SQLite, then PostgreSQL, and prints their medians side by side.
 *
 *   npm run bench:runs -- [--rounds 3] [--db both|sqlite|postgres] [--runs 10] [--duration 3] [--connections 50]
 */

import { benchArgs } from '../lib/bench-args.ts';
import { benchItemContext } from '../lib/bench-inputs.ts';
import { startBenchServer } from '../lib/bench-server.ts';
import { cpuTimes, measure, median } from '../lib/load-report.ts';

const { values: args } = benchArgs(import.meta.url, {
  options: {
    rounds: { type: 'string', default: '3' },
    db: { type: 'string', default: 'both' },
    runs: { type: 'string', default: '10' },
    duration: { type: 'string', default: '3' },
    connections: { type: 'string', default: '50' },
  },
});
const ROUNDS = Number(args.rounds);
const CONCURRENT_RUNS = Number(args.runs);
const ITEMS_PER_RUN = 1000;

let subjects = 0;
/**
 * 1,000 items with distinct subjects (so every log record is new): full files with plausible inputs, and
 * one in ten thin (the jurisdiction only), across four policies. Some are escalated, as in real traffic.
 */
function runBody(): string {
  const items = Array.from({ length: ITEMS_PER_RUN }, (_, i) => {
    return { subject: `bench-run-${subjects++}`, context: benchItemContext(i) };
  });
  return JSON.stringify({ items });
}

interface RunTiming {
  itemsPerSecond: number;
  serverItemsPerSecond: number;
  /** The server process's CPU time (all its threads) per item, in µs; NaN where /proc is not there. */
  serverCpuUsPerItem: number;
  escalated: number;
}

/** A process's CPU time so far (user + system, all threads) in µs, from /proc; NaN elsewhere. */
function processCpuUs(pid: number | undefined): number {
  return cpuTimes(pid)?.all ?? Number.NaN;
}

/** Submits `count` runs at once and polls until every one completed. */
async function timeRuns(
  url: string,
  headers: Record<string, string>,
  count: number,
  pid: number | undefined,
): Promise<RunTiming> {
  const bodies = Array.from({ length: count }, runBody);
  const cpuBefore = processCpuUs(pid);
  const started = performance.now();
  const created = await Promise.all(
    bodies.map(async (body) => {
      const response = await fetch(`${url}/v1/scoring/runs`, { method: 'POST', headers, body });
      if (response.status !== 202)
        throw new Error(`POST /v1/scoring/runs: ${response.status} ${await response.text()}`);
      return ((await response.json()) as { id: string }).id;
    }),
  );
  const ends = await Promise.all(
    created.map(async (id) => {
      for (;;) {
        const run = (await (await fetch(`${url}/v1/scoring/runs/${id}`, { headers })).json()) as {
          status: string;
          created_at: string;
          completed_at: string | null;
          counts: { escalated: number };
        };
        if (run.status === 'failed') throw new Error(`run ${id} failed: ${JSON.stringify(run)}`);
        if (run.status === 'completed') return run;
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
    }),
  );
  const elapsedMs = performance.now() - started;
  const cpuUs = processCpuUs(pid) - cpuBefore;
  const first = Math.min(...ends.map((r) => Date.parse(r.created_at)));
  const last = Math.max(...ends.map((r) => Date.parse(r.completed_at ?? '')));
  const items = count * ITEMS_PER_RUN;
  return {
    itemsPerSecond: (items / elapsedMs) * 1000,
    serverItemsPerSecond: (items / Math.max(1, last - first)) * 1000,
    serverCpuUsPerItem: cpuUs / items,
    escalated: ends.reduce((sum, run) => sum + run.counts.escalated, 0) / items,
  };
}

/** Measures one database's server over the rounds; gives each measurement's values. */
async function benchDatabase(db: string): Promise<Record<string, number[]>> {
  const server = await startBenchServer(db, 'bench-runs');
  try {
    const { headers } = server;
    const syncContext = { jurisdiction: 'DE', on_time_ratio: 0.96, utilization: 0.35, history_months: 84 };
    const syncTarget = {
      name: 'sync',
      url: `${server.url}/v1/scoring/score`,
      headers,
      body: (n: number) => JSON.stringify({ subject: `bench-sync-${n}`, context: syncContext }),
    };

    console.log(
      `bench/runs (${db}): ${ROUNDS} rounds of one ${ITEMS_PER_RUN}-item run, ${CONCURRENT_RUNS} concurrent runs, and ${args.duration} s of POST /v1/scoring/score at ${args.connections} connections; Node ${process.version}`,
    );
    const pid = server.process.pid;
    await timeRuns(server.url, headers, 1, pid); // warm-up, not reported
    await measure(syncTarget, Number(args.connections), 1);
    const rows: Record<string, number[]> = {};
    const record = (name: string, value: number) => {
      rows[name] = [...(rows[name] ?? []), value];
    };
    for (let round = 1; round <= ROUNDS; round++) {
      const one = await timeRuns(server.url, headers, 1, pid);
      const many = await timeRuns(server.url, headers, CONCURRENT_RUNS, pid);
      const sync = await measure(syncTarget, Number(args.connections), Number(args.duration));
      record('1 run: items/s end to end', one.itemsPerSecond);
      record('1 run: items/s server span', one.serverItemsPerSecond);
      record(`${CONCURRENT_RUNS} runs: items/s end to end`, many.itemsPerSecond);
      record(`${CONCURRENT_RUNS} runs: items/s server span`, many.serverItemsPerSecond);
      record(`${CONCURRENT_RUNS} runs: server CPU µs/item`, many.serverCpuUsPerItem);
      record('sync score: requests/s', sync.rps);
      console.log(
        `${db} round ${round}: 1 run ${Math.round(one.itemsPerSecond)} items/s, ${CONCURRENT_RUNS} runs ${Math.round(many.itemsPerSecond)} items/s (${Math.round(many.escalated * 100)} % escalated, server CPU ${many.serverCpuUsPerItem.toFixed(1)} µs/item), sync ${Math.round(sync.rps)} req/s (p99 ${sync.p99} ms, errors ${sync.errors}, non-2xx ${sync.non2xx})`,
      );
    }
    return rows;
  } finally {
    await server.stop();
  }
}

const databases = args.db === 'both' ? ['sqlite', 'postgres'] : [args.db];
const results: { db: string; rows: Record<string, number[]> }[] = [];
for (const db of databases) results.push({ db, rows: await benchDatabase(db) });
const measurements = Object.keys(results[0]?.rows ?? {});
console.table(
  measurements.map((measurement) => ({
    measurement,
    ...Object.fromEntries(
      results.flatMap(({ db, rows }) => {
        const values = rows[measurement] ?? [];
        const syncRate = median(rows['sync score: requests/s'] ?? []);
        return [
          [`${db} median`, Math.round(median(values))],
          [`${db} min–max`, `${Math.round(Math.min(...values))}–${Math.round(Math.max(...values))}`],
          [
            `${db} ratio to sync`,
            measurement.includes('CPU') ? '' : Number((median(values) / syncRate).toFixed(2)),
          ],
        ];
      }),
    ),
  })),
);
