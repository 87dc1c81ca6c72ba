/**
 * bench/log witnessed: the root log with two local witnesses (the built apps/witness), on the built server
 * at the default intervals, for issue 27's goals:
 *  1. Commit → cosigned root checkpoint: a scoring every `--sample-ms` while another `--rate` scorings/s
 *     run; for each sampled record, the time from its 200 (committed) until its proof file answers 200 —
 *     the record in the tenant's checkpoint, that checkpoint in a root checkpoint the policy's quorum
 *     cosigned (LOG_WITNESS_MODE=fail-closed serves no other). At rest, then while another tenant keeps
 *     `--runs` runs of 1,000 items in flight. Goal: p99 ≤ 2 s both times.
 *  2. Scoring throughput with the witnesses configured against the same build without them, alternated
 *     (`--rounds` × `--duration` s at `--connections`). Goal: ≥ 0.95 ×.
 *  3. Scorings asking `Prefer: log-inclusion` at `--connections`: their p99. Goal ≤ 1.5 s.
 *
 *   npm run bench:witnessed -- [--db sqlite|postgres|both] [--seconds 15] [--sample-ms 200] [--rate 200]
 *                               [--runs 4] [--rounds 3] [--duration 5] [--connections 50]
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { startNodeProcess, type WatchedProcess } from '@scenario-scoring/testkit';
import { NoteSigner } from '@scenario-scoring/tlog';
import { benchArgs } from '../lib/bench-args.ts';
import { benchContext } from '../lib/bench-inputs.ts';
import { type BenchServer, createApiKey, freshBenchDatabase, startServerOn } from '../lib/bench-server.ts';
import { measure, median, printSummary, type Round } from '../lib/load-report.ts';

const { values: args } = benchArgs(import.meta.url, {
  options: {
    db: { type: 'string', default: 'sqlite' },
    seconds: { type: 'string', default: '15' },
    'sample-ms': { type: 'string', default: '200' },
    rate: { type: 'string', default: '200' },
    runs: { type: 'string', default: '4' },
    rounds: { type: 'string', default: '3' },
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '50' },
  },
});
const ROOT = new URL('../../', import.meta.url).pathname;
const WITNESS_MAIN = join(ROOT, 'apps/witness/dist/main.js');
const ORIGIN = 'bench.witnessed/scenario-scoring';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
};
const summary = (values: number[]) =>
  `${values.length} records: p50 ${percentile(values, 50).toFixed(0)} ms, p90 ${percentile(values, 90).toFixed(0)} ms, p99 ${percentile(values, 99).toFixed(0)} ms, max ${Math.max(...values).toFixed(0)} ms`;

async function startWitness(name: string, logKey: string, dataDir: string) {
  const process_: WatchedProcess = startNodeProcess(
    [WITNESS_MAIN, '--name', name, '--log', logKey, '--data-dir', dataDir, '--port', '0'],
    { cwd: dirname(WITNESS_MAIN), env: { PATH: process.env.PATH ?? '' } },
  );
  const [line] = await process_.waitForOutput(/\{"listening".*\}/, 20_000);
  const { listening, verifier_key } = JSON.parse(line) as { listening: string; verifier_key: string };
  return { process: process_, url: listening, verifierKey: verifier_key };
}

/** Scores `subject` with `key`; resolves with the record's CID once answered (committed). */
async function score(server: BenchServer, key: string, subject: string, jurisdiction = 'DE') {
  const answer = await fetch(`${server.url}/v1/scoring/score`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ subject, context: benchContext(subject.length, jurisdiction) }),
  });
  if (answer.status !== 200) throw new Error(`score: ${answer.status} ${await answer.text()}`);
  return ((await answer.json()) as { log_cid: string }).log_cid;
}

/**
 * For `seconds`: a sampled scoring every `sampleMs` (each timed from its answer until its proof file is
 * served), `rate` other scorings per second of the same tenant beside them, and `flood` while it runs.
 */
async function commitToCosigned(server: BenchServer, key: string, seconds: number, label: string) {
  const end = performance.now() + seconds * 1000;
  const waits: number[] = [];
  const pending: Promise<void>[] = [];
  let n = 0;
  const background = (async () => {
    const interval = 1000 / Number(args.rate);
    let i = 0;
    const inflight = new Set<Promise<unknown>>();
    while (performance.now() < end) {
      const p = score(server, key, `${label}-bg-${i++}`).catch(() => {});
      inflight.add(p);
      p.finally(() => inflight.delete(p));
      await sleep(interval);
    }
    await Promise.all(inflight);
  })();
  while (performance.now() < end) {
    const cid = await score(server, key, `${label}-sample-${n++}`);
    const committed = performance.now();
    pending.push(
      (async () => {
        for (;;) {
          const answer = await fetch(`${server.url}/v1/logs/${cid}/proof-file`, {
            headers: { authorization: `Bearer ${key}` },
          });
          await answer.arrayBuffer();
          if (answer.status === 200) {
            waits.push(performance.now() - committed);
            return;
          }
          // 409: not in a served root checkpoint yet; 404 (fail-closed): no cosigned root checkpoint yet.
          if (answer.status !== 409 && answer.status !== 404) throw new Error(`proof-file: ${answer.status}`);
          if (performance.now() - committed > 60_000) throw new Error(`${cid}: no cosigned proof in 60 s`);
          await sleep(20);
        }
      })(),
    );
    await sleep(Number(args['sample-ms']));
  }
  await Promise.all([background, ...pending]);
  return waits;
}

/** Keeps `count` runs of 1,000 items of `key`'s tenant in flight until `stop()`. */
function floodRuns(server: BenchServer, key: string, count: number) {
  let stopped = false;
  const items = Array.from({ length: 1000 }, (_, i) => ({
    subject: `flood-${i}`,
    context: benchContext(i, 'FR'),
  }));
  const one = async () => {
    while (!stopped) {
      const created = await fetch(`${server.url}/v1/scoring/runs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ items }),
      });
      if (created.status !== 202) {
        await created.arrayBuffer();
        await sleep(200);
        continue;
      }
      const { id } = (await created.json()) as { id: string };
      for (;;) {
        const run = (await (
          await fetch(`${server.url}/v1/scoring/runs/${id}`, { headers: { authorization: `Bearer ${key}` } })
        ).json()) as { status: string };
        if (run.status === 'completed' || run.status === 'failed' || stopped) break;
        await sleep(100);
      }
    }
  };
  const all = Promise.all(Array.from({ length: count }, one));
  return async () => {
    stopped = true;
    await all;
  };
}

async function bench(db: string) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-witnessed-'));
  const seed = randomBytes(32);
  const logKey = await new NoteSigner(ORIGIN, seed).verifierKey();
  const witnesses = await Promise.all(
    [1, 2].map((i) => startWitness(`bench.witness/w${i}`, logKey, join(dir, `w${i}`))),
  );
  const policyPath = join(dir, 'witnesses.policy');
  writeFileSync(
    policyPath,
    [
      `log ${logKey}`,
      ...witnesses.map((w, i) => `witness w${i + 1} ${w.verifierKey} ${w.url}`),
      'group both all w1 w2',
      'quorum both',
      '',
    ].join('\n'),
  );
  const logEnv = { LOG_SIGNING_KEY: seed.toString('base64'), LOG_ORIGIN: ORIGIN };
  const witnessed = await freshBenchDatabase(db, 'witnessed');
  const plain = await freshBenchDatabase(db, 'plain');
  const servers: BenchServer[] = [];
  try {
    const keyOf = (database: typeof witnessed, tenant: string) =>
      createApiKey({ NODE_ENV: 'production', ...database.env, ...logEnv }, tenant);
    const victim = keyOf(witnessed, 'victim');
    const flooder = keyOf(witnessed, 'flooder');
    const server = await startServerOn(witnessed, victim, {
      ...logEnv,
      LOG_WITNESS_POLICY: policyPath,
      LOG_WITNESS_MODE: 'fail-closed',
    });
    servers.push(server);
    const without = await startServerOn(plain, keyOf(plain, 'victim'), logEnv);
    servers.push(without);
    const seconds = Number(args.seconds);

    console.log(
      `bench/log witnessed (${db}), two witnesses, quorum both, fail-closed, Node ${process.version}:`,
    );
    const rest = await commitToCosigned(server, victim, seconds, 'rest');
    console.log(`  commit → cosigned root, at rest (${args.rate} scorings/s beside): ${summary(rest)}`);
    const stopFlood = floodRuns(server, flooder, Number(args.runs));
    await sleep(1000);
    const flooded = await commitToCosigned(server, victim, seconds, 'flood');
    await stopFlood();
    console.log(
      `  commit → cosigned root, another tenant keeping ${args.runs} runs of 1,000 items in flight: ${summary(flooded)}`,
    );

    const body = (n: number) => JSON.stringify({ subject: `tp-${n}`, context: benchContext(n, 'DE') });
    const targets = [
      { name: 'with witnesses', server },
      { name: 'without witnesses', server: without },
    ];
    const rounds: Round[] = [];
    for (let round = 1; round <= Number(args.rounds); round++) {
      for (const { name, server: s } of targets) {
        const r = await measure(
          { name, url: `${s.url}/v1/scoring/score`, headers: s.headers, body, pid: s.process.pid },
          Number(args.connections),
          Number(args.duration),
        );
        rounds.push(r);
        console.log(`  round ${round} ${name.padEnd(18)} ${Math.round(r.rps)} req/s  p99 ${r.p99} ms`);
      }
    }
    printSummary(rounds, 'without witnesses');
    const ratio =
      median(rounds.filter((r) => r.target === 'with witnesses').map((r) => r.rps)) /
      median(rounds.filter((r) => r.target === 'without witnesses').map((r) => r.rps));
    console.log(`  throughput with ÷ without witnesses: ${ratio.toFixed(3)} (goal ≥ 0.95)`);

    const inclusion = await measure(
      {
        name: 'Prefer: log-inclusion',
        url: `${server.url}/v1/scoring/score`,
        headers: { ...server.headers, prefer: 'log-inclusion' },
        body,
        pid: server.process.pid,
      },
      Number(args.connections),
      Number(args.duration),
    );
    console.log(
      `  Prefer: log-inclusion at ${args.connections} connections: ${Math.round(inclusion.rps)} req/s, p50 ${inclusion.p50} ms, p99 ${inclusion.p99} ms (goal ≤ 1500), errors ${inclusion.errors}, non-2xx ${inclusion.non2xx}`,
    );
  } finally {
    for (const s of servers) await s.stop();
    for (const w of witnesses) await w.process.stop('SIGTERM', 5000).catch(() => undefined);
    await witnessed.drop();
    await plain.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

for (const db of args.db === 'both' ? ['sqlite', 'postgres'] : [args.db as string]) await bench(db);
