/**
 * bench/soak: measures the server's maximum scoring rate briefly, then holds about 80 % of it for a long
 * time, and reports errors, latency percentiles and the server process's resident memory over time, with
 * its growth. A leak shows as RSS that keeps climbing under a steady load. Not a test: run it by hand.
 *
 *   npm run bench:soak -- [--duration 300] [--probe 10] [--load 0.8] [--sample 10] [--connections 50] [--db sqlite|postgres]
 */
import { freePort } from '@scenario-scoring/testkit';
import autocannon from 'autocannon';
import { benchArgs } from '../lib/bench-args.ts';
import { startBenchServer } from '../lib/bench-server.ts';
import { heapUsedBytes, rssBytes } from './server-memory.ts';

const { values: args } = benchArgs(import.meta.url, {
  options: {
    duration: { type: 'string', default: '300' },
    probe: { type: 'string', default: '10' },
    load: { type: 'string', default: '0.8' },
    sample: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    db: { type: 'string', default: 'sqlite' },
  },
});
const DURATION_S = Number(args.duration);
const PROBE_S = Number(args.probe);
const LOAD = Number(args.load);
const SAMPLE_S = Number(args.sample);
const CONNECTIONS = Number(args.connections);

const context = { jurisdiction: 'DE', on_time_ratio: 0.96, utilization: 0.35, history_months: 84 };
let subjects = 0;

/** Runs autocannon against POST /v1/scoring/score; `onResponse` sees every answer. */
function load(
  url: string,
  headers: Record<string, string>,
  options: { duration: number; overallRate?: number },
  onResponse: (status: number, latencyMs: number) => void = () => {},
): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: `${url}/v1/scoring/score`,
        method: 'POST',
        connections: CONNECTIONS,
        duration: options.duration,
        ...(options.overallRate !== undefined && { overallRate: options.overallRate }),
        headers,
        // Every request a new subject, so every one writes a new log record.
        requests: [
          {
            setupRequest: (req) => ({
              ...req,
              body: JSON.stringify({ subject: `soak-${subjects++}`, context }),
            }),
          },
        ],
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
    instance.on('response', (_client, status, _bytes, latencyMs) => onResponse(status, latencyMs));
  });
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
const ms = (value: number) => value.toFixed(1).padStart(7);

const metricsPort = await freePort();
const server = await startBenchServer(args.db, 'soak', {
  METRICS_PORT: String(metricsPort),
  METRICS_HOST: '127.0.0.1',
});
const pid = server.process.pid ?? 0;
const serverRss = () => rssBytes(pid);
const serverHeap = () => heapUsedBytes(`http://127.0.0.1:${metricsPort}/metrics`);
let exitCode: number | null = null;
try {
  console.log(
    `bench/soak: ${args.db}, ${CONNECTIONS} connections, probe ${PROBE_S} s, hold ${DURATION_S} s at ${LOAD * 100} %, RSS every ${SAMPLE_S} s, Node ${process.version}`,
  );
  await load(server.url, server.headers, { duration: 2 }); // warm-up, not reported
  const probe = await load(server.url, server.headers, { duration: PROBE_S });
  const maxRate = probe.requests.average;
  const target = Math.max(1, Math.round(maxRate * LOAD));
  console.log(
    `maximum: ${Math.round(maxRate)} req/s (p99 ${probe.latency.p99} ms); holding ${target} req/s\n`,
  );

  const all: number[] = [];
  let window: number[] = [];
  let windowErrors = 0;
  let failures = 0;
  const samples: { atS: number; rss: number; heap: number }[] = [
    { atS: 0, rss: serverRss(), heap: await serverHeap() },
  ];
  console.log('    t/s   RSS/MB  heap/MB    req/s   p50/ms   p99/ms  errors');
  console.log(
    `${'0'.padStart(7)} ${mb(samples[0]?.rss ?? 0).padStart(8)} ${mb(await serverHeap()).padStart(8)}`,
  );
  const started = performance.now();
  const sampler = setInterval(async () => {
    const atS = Math.round((performance.now() - started) / 1000);
    const rss = serverRss();
    const sorted = window.sort((a, b) => a - b);
    const [count, errors] = [sorted.length, windowErrors];
    window = [];
    windowErrors = 0;
    const heap = await serverHeap().catch(() => Number.NaN);
    samples.push({ atS, rss, heap });
    console.log(
      `${String(atS).padStart(7)} ${mb(rss).padStart(8)} ${mb(heap).padStart(8)} ${String(Math.round(count / SAMPLE_S)).padStart(8)} ${ms(percentile(sorted, 50))}  ${ms(percentile(sorted, 99))} ${String(errors).padStart(7)}`,
    );
  }, SAMPLE_S * 1000);
  const held = await load(
    server.url,
    server.headers,
    { duration: DURATION_S, overallRate: target },
    (status, latency) => {
      all.push(latency);
      window.push(latency);
      if (status !== 200) {
        windowErrors++;
        failures++;
      }
    },
  );
  clearInterval(sampler);

  const sorted = all.sort((a, b) => a - b);
  // Growth is measured after the warm-up (caches fill, the JIT settles): from the first sample at or
  // after 10 % of the hold to the last one.
  const settleS = Math.max(SAMPLE_S, DURATION_S * 0.1);
  const first = samples.find((sample) => sample.atS >= settleS) ?? samples[0];
  const last = samples.at(-1);
  const peak = Math.max(...samples.map((sample) => sample.rss));
  const growth = first && last ? ((last.rss - first.rss) / first.rss) * 100 : Number.NaN;
  const heapGrowth = first && last ? ((last.heap - first.heap) / first.heap) * 100 : Number.NaN;
  console.log(`
held:      ${held.requests.total} requests in ${DURATION_S} s = ${Math.round(held.requests.total / DURATION_S)} req/s (target ${target})
errors:    ${failures} non-200, ${held.errors} connection errors, ${held.timeouts} timeouts
latency:   p50 ${percentile(sorted, 50).toFixed(1)} ms, p90 ${percentile(sorted, 90).toFixed(1)} ms, p99 ${percentile(sorted, 99).toFixed(1)} ms, max ${(sorted.at(-1) ?? Number.NaN).toFixed(1)} ms
log lines: ${server.process.lines()} printed by the server
RSS:       ${mb(first?.rss ?? 0)} MB at ${first?.atS} s, ${mb(last?.rss ?? 0)} MB at the end, peak ${mb(peak)} MB: growth ${growth.toFixed(1)} %
heap used: ${mb(first?.heap ?? 0)} MB at ${first?.atS} s, ${mb(last?.heap ?? 0)} MB at the end: ${heapGrowth.toFixed(1)} % (sampled, so GC timing makes it noisy)`);
} finally {
  exitCode = await server.stop();
}
console.log(`server exit code on SIGTERM: ${exitCode}`);
