/**
 * bench/log: the verifiable log's sequencer.
 *  1. Throughput: N records committed directly, then sequenced by the server's LogSequencer (the built
 *     server's code) in batches of LOG_SEQUENCER_BATCH's default; prints leaves sequenced per second. Then
 *     the CPU time per leaf of batches of one interval's size (`--steady-batch`, 3000 by default), and
 *     the main-thread CPU per record of committing records (`insertLogRows`, which queues them).
 *  2. Latency: the built server at the default LOG_CHECKPOINT_INTERVAL (1 s) under steady scoring; polls
 *     the latest checkpoint every 10 ms and prints the p50/p99 from a scoring's 200 (its record committed)
 *     to the first signed checkpoint whose tree holds its leaf.
 *  3. Cost on the hot path: POST /v1/scoring/score with sequencing every second vs. sequencing idle (an
 *     interval of one hour), alternated over rounds; prints requests/s and the ratio.
 *
 *     Also (bench/lib/load-report) the CPU time per request of the server's process and of its main thread
 *     (the event loop), read from /proc, which a shared machine disturbs far less than requests/s.
 *  With `--compare <another build's apps/server/dist>`, 1 and 3 also run that build, alternated with this one
 *  (1: `--seq-rounds` rounds each, on fresh databases).
 *
 *   npm run bench:log -- [--db sqlite|postgres] [--records 200000] [--seconds 10] [--rounds 3] [--duration 5]
 *                        [--compare <dist dir>] [--seq-rounds 1] [--steady-batch 3000] [--steady-batches 20]
 *                        [--commit-groups 400] [--skip latency,cost]
 */
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { cidOfBytes } from '@scenario-scoring/engine';
import * as thisBuild from '@scenario-scoring/server';
import { benchArgs } from '../lib/bench-args.ts';
import { freshBenchDatabase, startBenchServer } from '../lib/bench-server.ts';
import { measure, median, printSummary, type Round } from '../lib/load-report.ts';

const { values: args } = benchArgs(import.meta.url, {
  options: {
    db: { type: 'string', default: 'sqlite' },
    records: { type: 'string', default: '200000' },
    seconds: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '3' },
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '50' },
    compare: { type: 'string' },
    'seq-rounds': { type: 'string', default: '1' },
    'steady-batch': { type: 'string', default: '3000' },
    'steady-batches': { type: 'string', default: '20' },
    'commit-groups': { type: 'string', default: '400' },
    skip: { type: 'string', default: '' },
  },
});
const skip = new Set(args.skip.split(','));
type ServerModule = typeof thisBuild;
const builds: { name: string; server: ServerModule; main?: string }[] = [
  { name: 'this build', server: thisBuild },
];
if (args.compare) {
  const dist = resolve(args.compare);
  builds.push({
    name: 'compared build',
    server: (await import(pathToFileURL(join(dist, 'index.js')).href)) as ServerModule,
    main: join(dist, 'main.js'),
  });
}

console.log(`bench/log (${args.db}); Node ${process.version}`);

// 1. Sequencing throughput, and the sequencer's CPU per leaf in batches of one interval's size.
function benchRows(from: number, to: number) {
  const now = new Date().toISOString();
  const rows: Parameters<ServerModule['insertLogRows']>[1][number][] = [];
  for (let n = from; n < to; n++) {
    const bytes = new TextEncoder().encode(
      JSON.stringify({ schema: 'bench-log/1', n, pad: 'x'.repeat(400) }),
    );
    rows.push({
      tenant_id: 'bench',
      cid: cidOfBytes(bytes),
      bytes,
      request_id: 'req_bench',
      created_at: now,
    });
  }
  return rows;
}

/**
 * On a fresh database: `records` records committed, then sequenced in batches of LOG_SEQUENCER_BATCH's
 * default (leaves/s); then `--steady-batches` batches of `--steady-batch` records, each committed then
 * sequenced, timing the sequencing alone: its wall time and the CPU time of this process (the sequencer
 * runs on its main thread) per leaf, what a server pays per scoring at that rate.
 */
async function sequencingThroughput({ name, server }: (typeof builds)[number]): Promise<void> {
  const { NoteSigner, insertLogRows, LogSequencer, openStorage, silentLogger } = server;
  const count = Number(args.records);
  const database = await freshBenchDatabase(args.db, 'bench-log');
  const storage = await openStorage({
    dataDir: database.env.DATA_DIR as string,
    databaseUrl: database.env.DATABASE_URL,
  });
  try {
    for (let start = 0; start < count; start += 10_000) {
      const rows = benchRows(start, Math.min(count, start + 10_000));
      await storage.db.transaction().execute((trx) => insertLogRows(trx, rows));
    }
    const sequencer = new LogSequencer({
      storage,
      signer: new NoteSigner('bench', randomBytes(32)),
      config: {
        origin: 'bench.example/log',
        checkpointIntervalMs: 1000,
        // The build's own default (100,000 before builds exported it).
        maxBatch: 'DEFAULT_LOG_SEQUENCER_BATCH' in server ? server.DEFAULT_LOG_SEQUENCER_BATCH : 100_000,
      },
      clock: { now: () => new Date() },
      logger: silentLogger,
    });
    const started = performance.now();
    let sequenced = 0;
    for (;;) {
      const batch = await sequencer.sequenceTenant('bench');
      if (!batch) break;
      sequenced += batch.leaves;
    }
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `sequencing (${name}): ${sequenced} leaves in ${seconds.toFixed(2)} s = ${Math.round(sequenced / seconds)} leaves/s (goal ≥ 100000/s on SQLite)`,
    );

    const size = Number(args['steady-batch']);
    let wallMs = 0;
    let cpuUs = 0;
    let leaves = 0;
    for (let b = 0; b < Number(args['steady-batches']); b++) {
      const rows = benchRows(count + b * size, count + (b + 1) * size);
      await storage.db.transaction().execute((trx) => insertLogRows(trx, rows));
      const cpu = process.threadCpuUsage();
      const wall = performance.now();
      leaves += (await sequencer.sequenceTenant('bench'))?.leaves ?? 0;
      wallMs += performance.now() - wall;
      const used = process.threadCpuUsage(cpu);
      cpuUs += used.user + used.system;
    }
    if (leaves > 0) {
      console.log(
        `  batches of ${size} (${name}): ${(wallMs / Number(args['steady-batches'])).toFixed(1)} ms a batch, ${(cpuUs / leaves).toFixed(2)} µs of main-thread CPU per leaf`,
      );
    }
  } finally {
    await storage.close();
    await database.drop();
  }
}

/**
 * The commit path's share: main-thread CPU per record of `insertLogRows` in transactions of 50 records (a
 * group commit's size under load), the records built beforehand. On PostgreSQL the work the database
 * server does (the queue trigger among it) is not in this figure.
 */
async function commitCost({ name, server }: (typeof builds)[number]): Promise<void> {
  const database = await freshBenchDatabase(args.db, 'bench-log-commit');
  const storage = await server.openStorage({
    dataDir: database.env.DATA_DIR as string,
    databaseUrl: database.env.DATABASE_URL,
  });
  try {
    const groups = Array.from({ length: Number(args['commit-groups']) }, (_, g) =>
      benchRows(g * 50, (g + 1) * 50),
    );
    let cpuUs = 0;
    for (const rows of groups) {
      const cpu = process.threadCpuUsage();
      await storage.db.transaction().execute((trx) => server.insertLogRows(trx, rows));
      const used = process.threadCpuUsage(cpu);
      cpuUs += used.user + used.system;
    }
    console.log(
      `  commit path (${name}): ${(cpuUs / (groups.length * 50)).toFixed(2)} µs of main-thread CPU per record committed, in transactions of 50`,
    );
  } finally {
    await storage.close();
    await database.drop();
  }
}

for (let round = 0; round < Number(args['seq-rounds']); round++) {
  for (const build of builds) {
    await sequencingThroughput(build);
    if (Number(args['commit-groups']) > 0) await commitCost(build);
  }
}

// 2. Commit to inclusion in a signed checkpoint, at the default interval.
if (!skip.has('latency')) {
  const server = await startBenchServer(args.db, 'bench-log-latency');
  try {
    const acked: { cid: string; at: number }[] = [];
    const seen: { size: number; at: number }[] = [];
    let running = true;
    const poller = (async () => {
      while (running) {
        const response = await fetch(`${server.url}/v1/log/checkpoint`, { headers: server.headers });
        if (response.ok) {
          const { tree_size } = (await response.json()) as { tree_size: number };
          if (tree_size > (seen.at(-1)?.size ?? 0)) seen.push({ size: tree_size, at: performance.now() });
        } else await response.arrayBuffer();
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();
    const until = performance.now() + Number(args.seconds) * 1000;
    let n = 0;
    // Steady load: 10 clients, each scoring one subject after another.
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while (performance.now() < until) {
          const body = JSON.stringify({
            subject: `bench-log-${n++}`,
            context: { jurisdiction: 'DE', utilization: 0.3 },
          });
          const response = await fetch(`${server.url}/v1/scoring/score`, {
            method: 'POST',
            headers: server.headers,
            body,
          });
          const { log_cid } = (await response.json()) as { log_cid: string };
          acked.push({ cid: log_cid, at: performance.now() });
        }
      }),
    );
    // Wait for the last records' checkpoint.
    const last = performance.now() + 5000;
    while (performance.now() < last && (seen.at(-1)?.size ?? 0) < acked.length)
      await new Promise((r) => setTimeout(r, 20));
    running = false;
    await poller;
    const latencies: number[] = [];
    for (const { cid, at } of acked) {
      const response = await fetch(`${server.url}/v1/log/proofs/inclusion/${cid}`, {
        headers: server.headers,
      });
      const { leaf_index } = (await response.json()) as { leaf_index: number };
      const checkpoint = seen.find((entry) => entry.size > leaf_index);
      if (checkpoint) latencies.push(checkpoint.at - at);
    }
    latencies.sort((a, b) => a - b);
    const pct = (p: number) =>
      latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? Number.NaN;
    console.log(
      `commit → signed checkpoint: ${latencies.length} of ${acked.length} scorings, p50 ${pct(50).toFixed(0)} ms, p99 ${pct(99).toFixed(0)} ms, max ${(latencies.at(-1) ?? Number.NaN).toFixed(0)} ms (goal p99 ≤ 1500 ms at the 1 s interval)`,
    );
  } finally {
    await server.stop();
  }
}

// 3. The scoring hot path with sequencing on (every second) and idle (every hour).
if (!skip.has('cost')) {
  const context = { jurisdiction: 'DE', on_time_ratio: 0.96, utilization: 0.35, history_months: 84 };
  const servers: { name: string; server: Awaited<ReturnType<typeof startBenchServer>> }[] = [];
  try {
    for (const [i, build] of builds.entries()) {
      const suffix = i === 0 ? '' : ` (${build.name})`;
      servers.push({
        name: `sequencing idle${suffix}`,
        server: await startBenchServer(
          args.db,
          `bench-log-idle-${i}`,
          { LOG_CHECKPOINT_INTERVAL: '1h' },
          build.main,
        ),
      });
      servers.push({
        name: `sequencing on${suffix}`,
        server: await startBenchServer(args.db, `bench-log-on-${i}`, {}, build.main),
      });
    }
    const targets = servers.map(({ name, server }) => ({
      name,
      url: `${server.url}/v1/scoring/score`,
      headers: server.headers,
      body: (n: number) => JSON.stringify({ subject: `bench-${name}-${n}`, context }),
      pid: server.process.pid,
    }));
    for (const warm of targets) await measure(warm, Number(args.connections), 1);
    const rounds: Round[] = [];
    for (let round = 0; round < Number(args.rounds); round++) {
      for (const each of targets)
        rounds.push(await measure(each, Number(args.connections), Number(args.duration)));
    }
    // The table has each server's CPU time per request, of the process and of its main thread (/proc).
    printSummary(rounds, 'sequencing idle');
    for (const [i, build] of builds.entries()) {
      const suffix = i === 0 ? '' : ` (${build.name})`;
      const of = (name: string, value: (r: Round) => number) =>
        median(rounds.filter((r) => r.target === name).map(value));
      const on = `sequencing on${suffix}`;
      const idle = `sequencing idle${suffix}`;
      console.log(
        `${build.name}: sequencing on / idle: ${((of(on, (r) => r.rps) / of(idle, (r) => r.rps)) * 100).toFixed(1)} % of the requests/s (goal ≥ 95 %); main-thread CPU per request idle / on: ${((of(idle, (r) => r.mainThreadUs ?? 0) / of(on, (r) => r.mainThreadUs ?? 0)) * 100).toFixed(1)} %`,
      );
    }
  } finally {
    await Promise.all(servers.map(({ server }) => server.stop()));
  }
}
