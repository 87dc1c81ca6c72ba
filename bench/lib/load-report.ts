/** Running autocannon rounds and printing them beside a baseline. */
import autocannon from 'autocannon';

/** One measured round of one target. */
export interface Round {
  target: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

/** What autocannon sends to a target. */
export interface LoadTarget {
  name: string;
  url: string;
  headers: Record<string, string>;
  /** The body of the n-th request, so each one can differ (every score log record is then new). */
  body: (n: number) => string;
}

/** Runs one autocannon round against a target. */
export async function measure(
  target: LoadTarget,
  connections: number,
  durationSeconds: number,
): Promise<Round> {
  let n = 0;
  const result = await autocannon({
    url: target.url,
    method: 'POST',
    connections,
    duration: durationSeconds,
    headers: target.headers,
    requests: [{ setupRequest: (req) => ({ ...req, body: target.body(n++) }) }],
  });
  return {
    target: target.name,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}

/** The middle value (the mean of the two middle ones for an even count); 0 for none. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

/** Prints the median of each target's rounds and its ratio to each baseline's median requests/s. */
export function printSummary(rounds: Round[], baselines: string | string[]): void {
  const targets = [...new Set(rounds.map((r) => r.target))];
  const bases = [baselines].flat().map((name) => ({
    name,
    rps: median(rounds.filter((r) => r.target === name).map((r) => r.rps)),
  }));
  const rows = targets.map((target) => {
    const mine = rounds.filter((r) => r.target === target);
    const rps = median(mine.map((r) => r.rps));
    return {
      target,
      rounds: mine.length,
      'req/s (median)': Math.round(rps),
      'p50 ms': median(mine.map((r) => r.p50)),
      'p99 ms': median(mine.map((r) => r.p99)),
      ...Object.fromEntries(bases.map((b) => [`ratio to ${b.name}`, Number((rps / b.rps).toFixed(3))])),
      errors: mine.reduce((sum, r) => sum + r.errors, 0),
      'non-2xx': mine.reduce((sum, r) => sum + r.non2xx, 0),
    };
  });
  console.table(rows);
}
