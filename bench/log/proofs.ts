/**
 * bench/log proofs: what an auditor waits for a proof. On one database filled through the server's own path
 * (`--records` run items, then `--recent` scorings, all sequenced), the built server answers, one request
 * after the other (what an auditor's client does), `--requests` inclusion proofs of records spread over the
 * whole log (the first 100 items of each run of 1,000), the same number of the most recent records' proofs
 * (the right edge: partial tiles) and consistency proofs from earlier signed checkpoints to the latest;
 * prints each one's rate and its p50 / p99 in fractional milliseconds, from the client's side (node:http on
 * one kept-alive connection, see lib/sequential-get.ts).
 *
 * With `--compare <another build's apps/server/dist>` (the build before this one), that build fills the log
 * and each build is started in turn (never both at once; even rounds in reverse order) on a copy of that same
 * data of its own (this build migrates its copy at its first start), and the ratios of their p99s and rates
 * are printed, paired by round.
 *
 *   npm run bench:proofs -- [--db sqlite|postgres|both] [--records 5000] [--recent 100] [--requests 500]
 *                           [--rounds 3] [--compare <dist dir>]
 */
import { dirname, join, resolve } from 'node:path';
import { benchArgs } from '../lib/bench-args.ts';
import { benchContext } from '../lib/bench-inputs.ts';
import {
  type BenchDatabase,
  type BenchServer,
  copyBenchDatabase,
  createApiKey,
  freshBenchDatabase,
  loadEnv,
  startServerOn,
} from '../lib/bench-server.ts';
import { median, pairedRatios, type Round, roundOrder, settle } from '../lib/load-report.ts';
import { sequentialGets } from '../lib/sequential-get.ts';

const { values: args } = benchArgs(import.meta.url, {
  options: {
    db: { type: 'string', default: 'both' },
    records: { type: 'string', default: '5000' },
    recent: { type: 'string', default: '100' },
    requests: { type: 'string', default: '500' },
    rounds: { type: 'string', default: '3' },
    compare: { type: 'string' },
  },
});
const ROOT = new URL('../../', import.meta.url).pathname;
const RECORDS = Number(args.records);
const RECENT = Number(args.recent);
const REQUESTS = Number(args.requests);
const ROUNDS = Number(args.rounds);
const RUN_ITEMS = 1000;
const builds = [
  { name: 'this build', main: join(ROOT, 'apps/server/dist/main.js') },
  ...(args.compare
    ? [
        {
          name: 'compared',
          main: join(resolve(process.env.INIT_CWD ?? process.cwd(), args.compare), 'main.js'),
        },
      ]
    : []),
];

interface Measured {
  build: string;
  kind: string;
  rate: number;
  p50: number;
  p99: number;
}

/** `count` GETs of the server one after the other (see sequentialGets). */
function sequential(server: BenchServer, count: number, path: (i: number) => string) {
  return sequentialGets(server.url, server.headers, count, path);
}

async function json<T>(response: Response): Promise<T> {
  if (!response.ok) throw new Error(`${response.url}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

/** The tree size of the latest checkpoint, once it holds `size` leaves. */
async function sequenced(server: BenchServer, size: number): Promise<number[]> {
  const seen = new Set<number>();
  for (const deadline = Date.now() + 300_000; Date.now() < deadline; ) {
    const response = await fetch(`${server.url}/v1/log/checkpoint`, { headers: server.headers });
    if (response.status === 200) {
      const { tree_size } = (await response.json()) as { tree_size: number };
      seen.add(tree_size);
      if (tree_size >= size) return [...seen];
    } else await response.arrayBuffer();
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the log did not reach ${size} leaves`);
}

/** Fills the tenant's log through the server: runs of 1,000 items, then `RECENT` scorings. */
async function fill(server: BenchServer): Promise<{ spread: string[]; recent: string[]; sizes: number[] }> {
  const runs: string[] = [];
  for (let done = 0; done < RECORDS; done += RUN_ITEMS) {
    const items = Array.from({ length: Math.min(RUN_ITEMS, RECORDS - done) }, (_, i) => ({
      subject: `proofs-${done + i}`,
      context: benchContext(done + i, 'DE'),
    }));
    const { id } = await json<{ id: string }>(
      await fetch(`${server.url}/v1/scoring/runs`, {
        method: 'POST',
        headers: server.headers,
        body: JSON.stringify({ items }),
      }),
    );
    runs.push(id);
  }
  const spread: string[] = [];
  for (const id of runs) {
    for (;;) {
      const run = await json<{ status: string }>(
        await fetch(`${server.url}/v1/scoring/runs/${id}`, { headers: server.headers }),
      );
      if (run.status === 'completed') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const page = await json<{ data: { log_cid?: string }[] }>(
      await fetch(`${server.url}/v1/scoring/runs/${id}/results?limit=100`, { headers: server.headers }),
    );
    for (const item of page.data) if (item.log_cid) spread.push(item.log_cid);
  }
  const sizes = await sequenced(server, RECORDS);
  const recent: string[] = [];
  for (let i = 0; i < RECENT; i++) {
    const scored = await json<{ log_cid: string }>(
      await fetch(`${server.url}/v1/scoring/score`, {
        method: 'POST',
        headers: server.headers,
        body: JSON.stringify({ subject: `proofs-recent-${i}`, context: benchContext(i, 'DE') }),
      }),
    );
    recent.push(scored.log_cid);
  }
  sizes.push(...(await sequenced(server, RECORDS + RECENT)));
  return { spread, recent, sizes };
}

const all: Measured[] = [];
for (const db of args.db === 'both' ? ['sqlite', 'postgres'] : [args.db]) {
  const database = await freshBenchDatabase(db as string, 'proofs');
  try {
    // Filled by the last build named (the compared one, the build before, when there is one), then each
    // build runs on a copy of its own: a newer build migrates its copy at its first start, and an older one
    // would refuse data a newer build had migrated.
    const apiKey = createApiKey(
      loadEnv(database),
      'bench',
      join(dirname(builds.at(-1)?.main as string), 'cli.js'),
    );
    let server = await startServerOn(database, apiKey, {}, builds.at(-1)?.main);
    const filled = await fill(server);
    const tree = RECORDS + RECENT;
    const older = [...new Set(filled.sizes)].filter((size) => size > 0 && size < tree);
    console.log(
      `${db}: ${tree} leaves (${filled.spread.length} spread, ${filled.recent.length} recent), ${older.length} earlier checkpoints`,
    );
    await server.stop();
    const copies = new Map<string, BenchDatabase>();
    for (const build of builds) copies.set(build.name, await copyBenchDatabase(database, 'proofs'));
    try {
      for (let round = 0; round < ROUNDS; round++) {
        for (const build of roundOrder(builds, round + 1)) {
          server = await startServerOn(copies.get(build.name) as BenchDatabase, apiKey, {}, build.main);
          try {
            // Warm: the contract's validators and the first tiles, as on a server that has run a while.
            await sequential(
              server,
              50,
              (i) => `/v1/log/proofs/inclusion/${filled.spread[i % filled.spread.length]}`,
            );
            await settle();
            const kinds = {
              'inclusion, spread': (i: number) =>
                `/v1/log/proofs/inclusion/${filled.spread[(i * 7919) % filled.spread.length]}`,
              'inclusion, recent': (i: number) =>
                `/v1/log/proofs/inclusion/${filled.recent[i % filled.recent.length]}`,
              consistency: (i: number) =>
                `/v1/log/proofs/consistency?from=${older[i % older.length]}&to=${tree}`,
            };
            for (const [kind, path] of Object.entries(kinds)) {
              if (kind === 'consistency' && older.length === 0) continue;
              const result = await sequential(server, REQUESTS, path);
              all.push({ build: `${db} ${build.name}`, kind, ...result });
              console.log(
                `${db} round ${round + 1} ${build.name.padEnd(10)} ${kind.padEnd(18)} ${result.rate.toFixed(0).padStart(5)}/s  p50 ${result.p50.toFixed(2)} ms  p99 ${result.p99.toFixed(2)} ms`,
              );
            }
          } finally {
            await server.stop();
          }
        }
      }
    } finally {
      for (const copy of copies.values()) await copy.drop();
    }
  } finally {
    await database.drop();
  }
}

console.log('\nmedian over rounds (client side, one request at a time)');
const table: Record<string, Record<string, string>> = {};
for (const key of new Set(all.map((m) => `${m.build} | ${m.kind}`))) {
  const rows = all.filter((m) => `${m.build} | ${m.kind}` === key);
  table[key] = {
    'req/s': median(rows.map((m) => m.rate)).toFixed(0),
    'p50 ms': median(rows.map((m) => m.p50)).toFixed(2),
    'p99 ms': median(rows.map((m) => m.p99)).toFixed(2),
  };
}
console.table(table);
if (builds.length === 2) {
  for (const db of new Set(all.map((m) => m.build.split(' ')[0]))) {
    for (const kind of new Set(all.map((m) => m.kind))) {
      const paired = (field: 'rate' | 'p99') => {
        const rounds = all
          .filter((m) => m.kind === kind && m.build.startsWith(`${db} `))
          .map(
            (m): Round => ({ target: m.build, rps: m[field], p50: m.p50, p99: m.p99, errors: 0, non2xx: 0 }),
          );
        return pairedRatios(rounds, `${db} this build`, `${db} compared`);
      };
      const rate = paired('rate');
      const p99 = paired('p99');
      if (rate && p99)
        console.log(
          `${db} ${kind}: this build ÷ compared, paired by round (median, quartiles): rate ${rate.median.toFixed(2)} (${rate.q1.toFixed(2)}-${rate.q3.toFixed(2)}), p99 ${p99.median.toFixed(2)} (${p99.q1.toFixed(2)}-${p99.q3.toFixed(2)})`,
        );
    }
  }
}
