/**
 * Another tenant's scoring at a fixed rate (an open loop: each request is sent when due, whatever the
 * answers before it), as the isolation benches measure it beside a tenant's flood.
 */
import type { BenchServer } from './bench-server.ts';

/** The p-th percentile of ascending `sorted` (NaN when empty). */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

/** One line: how many answers, p50/p90/p99/max latency, failures; `name` padded to `width`. */
export function victimSummary(name: string, latencies: number[], failures: number, width = 8): string {
  const sorted = [...latencies].sort((a, b) => a - b);
  const f = (n: number) => `${n.toFixed(1)} ms`;
  return `${name.padEnd(width)} ${String(sorted.length).padStart(6)} answers  p50 ${f(percentile(sorted, 50))}  p90 ${f(percentile(sorted, 90))}  p99 ${f(percentile(sorted, 99))}  max ${f(sorted.at(-1) ?? Number.NaN)}  failed ${failures}`;
}

/**
 * Scores a new subject every 1/`rate` s with `key` until `until()`: the latencies of the 200s, the failures,
 * and [seconds since the start, latency] of each answer (for windows of the run).
 */
export async function fixedRateVictim(server: BenchServer, key: string, rate: number, until: () => boolean) {
  const latencies: number[] = [];
  const timeline: [number, number][] = [];
  let failures = 0;
  const inflight = new Set<Promise<void>>();
  let n = 0;
  const started = performance.now();
  while (!until()) {
    const due = started + (n * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    n++;
    const sent = performance.now();
    const request = fetch(`${server.url}/v1/scoring/score`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ subject: `victim-${n}`, context: { jurisdiction: 'US' } }),
    })
      .then(async (answer) => {
        await answer.arrayBuffer();
        if (answer.status === 200) {
          latencies.push(performance.now() - sent);
          timeline.push([(sent - started) / 1000, performance.now() - sent]);
        } else failures++;
      })
      .catch(() => {
        failures++;
      })
      .finally(() => inflight.delete(request));
    inflight.add(request);
  }
  await Promise.all(inflight);
  return { latencies, failures, timeline };
}
