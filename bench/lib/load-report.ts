/** Running autocannon rounds and printing them beside a baseline. */
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';

/** One measured round of one target. */
export interface Round {
  target: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  /** CPU time of the target's process per answered request (all its threads), µs; when its pid is known. */
  cpuUs?: number;
  /** The same for its main thread alone, µs. */
  mainThreadUs?: number;
}

/** What autocannon sends to a target. */
export interface LoadTarget {
  name: string;
  url: string;
  headers: Record<string, string>;
  /** The body of the n-th request, so each one can differ (every score log record is then new). */
  body: (n: number) => string;
  /** The target's process (Linux): its CPU time per request is then measured too. */
  pid?: number;
}

/**
 * CPU time (user + system) used so far by a process, all threads, and by its main thread, in µs, from
 * /proc; undefined where there is no /proc. Unlike requests/s, CPU time per request hardly moves with
 * what else runs on the machine.
 */
export function cpuTimes(pid: number | undefined): { all: number; main: number } | undefined {
  if (pid === undefined) return undefined;
  const ticks = (file: string) => {
    const stat = readFileSync(file, 'utf8');
    // After the command name, which may itself hold ') '.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  };
  try {
    // USER_HZ is 100 on Linux.
    return {
      all: ticks(`/proc/${pid}/stat`) * 10_000,
      main: ticks(`/proc/${pid}/task/${pid}/stat`) * 10_000,
    };
  } catch {
    return undefined;
  }
}

/** Runs one autocannon round against a target. */
export async function measure(
  target: LoadTarget,
  connections: number,
  durationSeconds: number,
): Promise<Round> {
  let n = 0;
  const before = cpuTimes(target.pid);
  const result = await autocannon({
    url: target.url,
    method: 'POST',
    connections,
    duration: durationSeconds,
    headers: target.headers,
    requests: [{ setupRequest: (req) => ({ ...req, body: target.body(n++) }) }],
  });
  const after = cpuTimes(target.pid);
  const answered = result.requests.total;
  return {
    target: target.name,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    ...(before && after && answered > 0
      ? { cpuUs: (after.all - before.all) / answered, mainThreadUs: (after.main - before.main) / answered }
      : {}),
  };
}

/** The machine's busy and total CPU time so far (`/proc/stat`'s first line, in ticks); undefined off Linux. */
function machineTicks(): { busy: number; total: number } | undefined {
  try {
    const fields =
      readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
    const total = fields.reduce((sum, t) => sum + t, 0);
    // idle and iowait are the 4th and 5th.
    return { busy: total - (fields[3] ?? 0) - (fields[4] ?? 0), total };
  } catch {
    return undefined;
  }
}

/**
 * Waits until the machine is idle (under `busyShare` of its CPU over 200 ms), at most `maxMs`. A server just
 * loaded still checkpoints its SQLite WAL or has PostgreSQL write back and vacuum, and collects its garbage:
 * without this the target measured next pays for the one before it, which biases a `--compare` run towards
 * whichever build runs first.
 */
export async function settle(maxMs = 5_000, busyShare = 0.15): Promise<void> {
  const deadline = Date.now() + maxMs;
  let last = machineTicks();
  while (last !== undefined && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const now = machineTicks();
    if (now === undefined) return;
    const total = now.total - last.total;
    if (total > 0 && (now.busy - last.busy) / total < busyShare) return;
    last = now;
  }
}

/**
 * The order of the targets in round `round` (from 1): as given in odd rounds, reversed in even ones, so each
 * target follows and precedes the others equally over an even number of rounds.
 */
export function roundOrder<T>(targets: readonly T[], round: number): T[] {
  return round % 2 === 1 ? [...targets] : [...targets].reverse();
}

/** The middle value (the mean of the two middle ones for an even count); 0 for none. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

/**
 * For two targets measured in the same rounds, the ratio of `target`'s requests/s to `base`'s in each round,
 * and their median and quartiles: paired by round, so the machine's drift from one round to the next (which
 * moves both) cancels, unlike a ratio of the two medians.
 */
export function pairedRatios(
  rounds: readonly Round[],
  target: string,
  base: string,
): { ratios: number[]; median: number; q1: number; q3: number } | undefined {
  const byRound = (name: string) => rounds.filter((r) => r.target === name).map((r) => r.rps);
  const mine = byRound(target);
  const theirs = byRound(base);
  if (mine.length === 0 || mine.length !== theirs.length) return undefined;
  const ratios = mine.map((rps, i) => rps / (theirs[i] as number));
  const sorted = [...ratios].sort((a, b) => a - b);
  const quantile = (q: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
  return { ratios, median: median(ratios), q1: quantile(0.25), q3: quantile(0.75) };
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
      ...(mine.every((r) => r.cpuUs !== undefined) && {
        'CPU µs/req': Math.round(median(mine.map((r) => r.cpuUs ?? 0))),
        'main thread µs/req': Math.round(median(mine.map((r) => r.mainThreadUs ?? 0))),
      }),
      errors: mine.reduce((sum, r) => sum + r.errors, 0),
      'non-2xx': mine.reduce((sum, r) => sum + r.non2xx, 0),
    };
  });
  console.table(rows);
}
