/**
 * bench/scale: what the server costs as one tenant's log grows. For each N of `--sizes` and each database:
 *
 *  1. Fill: a fresh database (one tenant, `bench`) gets N real score-log/2 records (`scoreAndLog`, each with
 *     its own subject and salt) through the storage path scoring uses (`insertLogRecords`, with the
 *     deployment's subject key), in transactions of 5,000; after every 100,000 records the server's
 *     LogSequencer (its default batch, the deployment's signing key and origin from `loadConfig`) sequences
 *     what is queued: leaves, tiles and signed checkpoints, exactly what a running server writes. So the
 *     queue never holds more than 100,000 records (a running server's holds seconds of scorings); on
 *     PostgreSQL it is vacuumed after each round, as autovacuum does for a running server (a queue of N
 *     records sequenced at once left N dead entries in its index, which every batch walked, so the
 *     sequencer slowed with N). Prints the insert rate and the sequencer's leaves/s (the most one sequencer
 *     appends to one tenant's log). On PostgreSQL the database is then vacuumed and analysed (`settleFilled`).
 *  2. The built server started on that data: spawn to /readyz 200 (nothing may scan the log at start).
 *  3. POST /v1/scoring/score (autocannon, `--connections`, `--duration`): req/s, p99, the server process's
 *     CPU per scoring (/proc, all threads and main thread) and, on PostgreSQL, the CPU of this database's
 *     backends (their /proc, so the shared server's other databases are not counted) and the statements,
 *     rows and commits per scoring (pg_stat_database; pg_stat_statements is used when installed), and the WAL
 *     bytes and full-page images written per scoring (pg_stat_wal: the whole PostgreSQL server's, so run
 *     nothing else against it meanwhile).
 *  4. Bytes on disk per scoring (SQLite: the database files with WAL; PostgreSQL: pg_database_size), once the
 *     load's records are sequenced; and per record filled.
 *  5. Commit → signed checkpoint latency (10 clients scoring for `--latency-seconds`, the checkpoint polled
 *     every 10 ms), then inclusion and consistency proof p99 (`--proofs` sequential requests each, over
 *     records of the whole tree).
 *  6. One JSON run of 1,000 items: items/s end to end, and the server's CPU per item.
 *
 * Prints a table and writes every figure to `--out` (JSON, what bench/scale/sizing.ts reads), a path relative to
 * where `npm run` was typed.
 *
 *   npm run bench:scale -- [--sizes 0,20000] [--db sqlite|postgres|both] [--duration 5] [--connections 50]
 *                          [--latency-seconds 5] [--proofs 300] [--out scale-result.json]
 *   npm run bench:scale -- --sizing [--out docs/scale-result.json]   (prints the sizing table of a result file)
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { scoreAndLog } from '@scenario-scoring/engine';
import {
  insertLogRecords,
  LogSequencer,
  loadConfig,
  NoteSigner,
  newId,
  openStorage,
  silentLogger,
  TenantKeyedHash,
} from '@scenario-scoring/server';
import pg from 'pg';
import { benchArgs } from '../lib/bench-args.ts';
import { benchContext, benchItemContext } from '../lib/bench-inputs.ts';
import {
  type BenchDatabase,
  type BenchServer,
  createApiKey,
  freshBenchDatabase,
  loadEnv,
  startServerOn,
} from '../lib/bench-server.ts';
import { cpuTimes, measure } from '../lib/load-report.ts';
import { sequentialGets } from '../lib/sequential-get.ts';
import { printSizing, type ScaleResult, type SizeResult } from './sizing.ts';

const { values: args } = benchArgs(import.meta.url, {
  options: {
    sizes: { type: 'string', default: '0,20000' },
    db: { type: 'string', default: 'both' },
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '50' },
    'latency-seconds': { type: 'string', default: '5' },
    proofs: { type: 'string', default: '300' },
    out: { type: 'string', default: 'scale-result.json' },
    sizing: { type: 'boolean', default: false },
  },
});
// Relative to where `npm run` was typed (npm runs the script in bench/).
const OUT = resolve(process.env.INIT_CWD ?? process.cwd(), args.out);
if (args.sizing) {
  printSizing(OUT);
  process.exit(0);
}
const SIZES = args.sizes.split(',').map(Number);
const DATABASES = args.db === 'both' ? ['sqlite', 'postgres'] : [args.db];
const TENANT = 'bench';
const FILL_BATCH = 5000;
/** Records inserted between two rounds of sequencing in the fill (a multiple of FILL_BATCH). */
const SEQUENCE_EVERY = 100_000;
const RUN_ITEMS = 1000;

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Bytes the database holds: the SQLite files (WAL and SHM included), or pg_database_size. */
async function databaseBytes(database: BenchDatabase): Promise<number> {
  const url = database.env.DATABASE_URL;
  if (url === undefined) {
    const dir = database.env.DATA_DIR as string;
    return readdirSync(dir)
      .filter((file) => /\.(db|sqlite)(-wal|-shm)?$|\.sqlite3?(-wal|-shm)?$/.test(file))
      .reduce((sum, file) => sum + statSync(join(dir, file)).size, 0);
  }
  return Number((await pgQuery(url, 'SELECT pg_database_size(current_database()) AS n'))[0]?.n);
}

async function pgQuery(url: string, text: string): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text)).rows;
  } finally {
    await client.end();
  }
}

/** On PostgreSQL: CPU µs so far of this database's backends (their /proc), and its counters. */
async function pgCounters(url: string | undefined) {
  if (url === undefined) return undefined;
  const backends = await pgQuery(
    url,
    'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
  );
  const cpu = new Map<number, number>();
  for (const { pid } of backends) {
    const times = cpuTimes(Number(pid));
    if (times) cpu.set(Number(pid), times.all);
  }
  const [stats] = await pgQuery(
    url,
    'SELECT xact_commit, tup_inserted, tup_updated, tup_deleted, tup_returned, tup_fetched FROM pg_stat_database WHERE datname = current_database()',
  );
  let statements: number | undefined;
  try {
    const [row] = await pgQuery(
      url,
      'SELECT sum(calls) AS n FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = current_database()',
    );
    statements = Number(row?.n);
  } catch {
    statements = undefined; // pg_stat_statements is not installed
  }
  // The WAL written: cluster-wide (pg_stat_wal counts every database of the server), so a figure only while
  // nothing else writes to that server.
  const [wal] = await pgQuery(url, 'SELECT wal_bytes, wal_fpi FROM pg_stat_wal');
  return {
    cpu,
    stats: stats as Record<string, string>,
    statements,
    walBytes: Number(wal?.wal_bytes),
    walFullPageImages: Number(wal?.wal_fpi),
  };
}

/** Fills the tenant with `count` records and sequences them as the server does; returns the rates and CIDs sampled. */
async function fill(database: BenchDatabase, count: number) {
  const env = loadEnv(database);
  const config = loadConfig(env);
  const storage = await openStorage({ dataDir: config.dataDir, databaseUrl: config.databaseUrl });
  const keyedHash = new TenantKeyedHash(Buffer.from(env.SECRETS_KEY as string, 'base64'));
  const subjectKey = (tenantId: string, subject: string) => keyedHash.hash('subject', tenantId, subject);
  const sample: string[] = [];
  const sequencer = new LogSequencer({
    storage,
    signer: new NoteSigner(
      config.verifiableLog.keyName,
      Buffer.from(env.LOG_SIGNING_KEY as string, 'base64'),
    ),
    config: config.verifiableLog,
    clock: { now: () => new Date() },
    logger: silentLogger,
  });
  let insertMs = 0;
  let sequenceMs = 0;
  let leaves = 0;
  const checkpoints: number[] = [];
  /**
   * Sequences everything queued, as the server's rounds do (timed: the sequencer's leaves/s); on PostgreSQL
   * then vacuums the queue, untimed (autovacuum's work in a running server, not the sequencer's).
   */
  const sequenceQueued = async () => {
    const sequencedAt = performance.now();
    for (;;) {
      const batch = await sequencer.sequenceTenant(TENANT);
      if (!batch) break;
      leaves += batch.leaves;
      checkpoints.push(batch.treeSize);
    }
    sequenceMs += performance.now() - sequencedAt;
    if (config.databaseUrl !== undefined) await pgQuery(config.databaseUrl, 'VACUUM log_leaf_queue');
  };
  try {
    const createdAt = new Date();
    for (let start = 0; start < count; start += FILL_BATCH) {
      const insertedAt = performance.now();
      const records = [];
      for (let n = start; n < Math.min(count, start + FILL_BATCH); n++) {
        const requestId = newId('req');
        const subject = `scale-${n}`;
        const logged = scoreAndLog(subject, benchItemContext(n), {
          identity: { kind: 'score', request_id: requestId },
          scored_at: createdAt.toISOString(),
          salt: randomBytes(32).toString('base64url'),
        });
        if (n % Math.max(1, Math.floor(count / 1000)) === 0) sample.push(logged.logCid);
        records.push({
          tenantId: TENANT,
          cid: logged.logCid,
          bytes: logged.logBytes,
          requestId,
          createdAt,
          subject,
        });
      }
      await insertLogRecords(storage, records, subjectKey);
      insertMs += performance.now() - insertedAt;
      const inserted = Math.min(count, start + FILL_BATCH);
      if (inserted % SEQUENCE_EVERY === 0 || inserted === count) await sequenceQueued();
      if (inserted % 1_000_000 === 0)
        console.log(
          `  … ${inserted} records inserted and sequenced (${Math.round(inserted / (insertMs / 1000))} records/s, ${Math.round(leaves / (sequenceMs / 1000))} leaves/s)`,
        );
    }
    const insertSeconds = insertMs / 1000;
    const sequenceSeconds = sequenceMs / 1000;
    return {
      insertPerSecond: count / Math.max(insertSeconds, 1e-9),
      leavesPerSecond: leaves > 0 ? leaves / sequenceSeconds : Number.NaN,
      fillSeconds: insertSeconds + sequenceSeconds,
      sample,
      checkpoints,
    };
  } finally {
    await storage.close();
  }
}

interface Checkpoint {
  tree_size: number;
}

async function treeSize(server: BenchServer): Promise<number> {
  const response = await fetch(`${server.url}/v1/log/checkpoint`, { headers: server.headers });
  if (!response.ok) {
    await response.arrayBuffer();
    return 0;
  }
  return ((await response.json()) as Checkpoint).tree_size;
}

/** Waits until the signed tree stops growing (every committed record sequenced); returns its size. */
async function settledTreeSize(server: BenchServer): Promise<number> {
  let last = -1;
  for (;;) {
    const size = await treeSize(server);
    if (size === last) return size;
    last = size;
    await sleep(2500);
  }
}

/** Commit → signed checkpoint: 10 clients scoring, the checkpoint polled every 10 ms. */
async function commitLatency(server: BenchServer, seconds: number) {
  const acked: { cid: string; at: number }[] = [];
  const seen: { size: number; at: number }[] = [];
  let running = true;
  const poller = (async () => {
    while (running) {
      const size = await treeSize(server);
      if (size > (seen.at(-1)?.size ?? 0)) seen.push({ size, at: performance.now() });
      await sleep(10);
    }
  })();
  const until = performance.now() + seconds * 1000;
  let n = 0;
  try {
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while (performance.now() < until) {
          const response = await fetch(`${server.url}/v1/scoring/score`, {
            method: 'POST',
            headers: server.headers,
            body: JSON.stringify({ subject: `scale-latency-${n++}`, context: benchContext(n, 'DE') }),
          });
          if (!response.ok)
            throw new Error(`POST /v1/scoring/score: ${response.status} ${await response.text()}`);
          const { log_cid } = (await response.json()) as { log_cid: string };
          acked.push({ cid: log_cid, at: performance.now() });
        }
      }),
    );
  } catch (error) {
    // The poller stops first, so the failing client's error is the one reported.
    running = false;
    await poller.catch(() => undefined);
    throw error;
  }
  const deadline = performance.now() + 10_000;
  const target = (await settledTreeSize(server)) || 0;
  while (performance.now() < deadline && (seen.at(-1)?.size ?? 0) < target) await sleep(20);
  running = false;
  await poller;
  const latencies: number[] = [];
  for (const { cid, at } of acked) {
    const response = await fetch(`${server.url}/v1/log/proofs/inclusion/${cid}`, { headers: server.headers });
    if (!response.ok) {
      await response.arrayBuffer();
      continue;
    }
    const { leaf_index } = (await response.json()) as { leaf_index: number };
    const checkpoint = seen.find((entry) => entry.size > leaf_index);
    if (checkpoint) latencies.push(checkpoint.at - at);
  }
  latencies.sort((a, b) => a - b);
  return {
    p50: pct(latencies, 50),
    p99: pct(latencies, 99),
    cids: acked.map((a) => a.cid),
    checkpoints: seen.map((s) => s.size),
  };
}

/** p99 of `count` sequential GETs of `path(i)`, in ms; fails on any answer but 200. */
async function getP99(server: BenchServer, count: number, path: (i: number) => string): Promise<number> {
  return (await sequentialGets(server.url, server.headers, count, path)).p99;
}

/** One JSON run of 1,000 items, polled every ms until completed: items/s and the server's CPU µs per item. */
async function runRate(server: BenchServer) {
  const items = Array.from({ length: RUN_ITEMS }, (_, i) => ({
    subject: `scale-run-${i}-${Date.now()}`,
    context: benchItemContext(i),
  }));
  const cpuBefore = cpuTimes(server.process.pid)?.all ?? Number.NaN;
  const started = performance.now();
  const response = await fetch(`${server.url}/v1/scoring/runs`, {
    method: 'POST',
    headers: server.headers,
    body: JSON.stringify({ items }),
  });
  if (response.status !== 202) throw new Error(`POST /v1/scoring/runs: ${response.status}`);
  const { id } = (await response.json()) as { id: string };
  for (;;) {
    const run = (await (
      await fetch(`${server.url}/v1/scoring/runs/${id}`, { headers: server.headers })
    ).json()) as {
      status: string;
    };
    if (run.status === 'failed') throw new Error(`run ${id} failed`);
    if (run.status === 'completed') break;
    await sleep(1);
  }
  const seconds = (performance.now() - started) / 1000;
  const cpuAfter = cpuTimes(server.process.pid)?.all ?? Number.NaN;
  return { itemsPerSecond: RUN_ITEMS / seconds, cpuUsPerItem: (cpuAfter - cpuBefore) / RUN_ITEMS };
}

/**
 * On PostgreSQL, `VACUUM (ANALYZE)` once the fill is sequenced. The fill queues every record before the
 * sequencer runs, so the leaf queue has held N rows and its index keeps N dead entries at its front, which
 * each of the sequencer's scans walks, and autovacuum would clean them (minutes of a database backend's CPU)
 * while the server is measured. A running server's queue never holds more than a few seconds of scorings, and
 * autovacuum keeps a long-lived database in the state this leaves: what the measurement is meant to see.
 */
async function settleFilled(database: BenchDatabase): Promise<void> {
  const url = database.env.DATABASE_URL;
  if (url !== undefined) await pgQuery(url, 'VACUUM (ANALYZE)');
}

/** Everything measured at one size on one database. */
async function measureSize(db: string, size: number): Promise<SizeResult> {
  const database = await freshBenchDatabase(db, 'bench-scale', randomBytes(32).toString('base64'));
  database.env.LOG_SIGNING_KEY ??= randomBytes(32).toString('base64');
  try {
    const apiKey = createApiKey(loadEnv(database), TENANT);
    const emptyBytes = await databaseBytes(database);
    const filled = await fill(database, size);
    await settleFilled(database);
    const filledBytes = await databaseBytes(database);
    console.log(
      `${db} N=${size}: filled in ${filled.fillSeconds.toFixed(1)} s (${Math.round(filled.insertPerSecond)} records/s inserted, sequencer ${Math.round(filled.leavesPerSecond)} leaves/s)`,
    );
    // No storage quota: ten million records hold about 15 GB of record bytes, past the default 10 GB, and
    // every scoring would be refused (403 quota_exceeded).
    const server = await startServerOn(database, apiKey, { TENANT_STORAGE_QUOTA: '0' });
    try {
      const readyMs = server.process.readyMs;
      if ((await treeSize(server)) !== size)
        throw new Error(`the tree does not hold the ${size} records filled`);
      const target = {
        name: `${db} N=${size}`,
        url: `${server.url}/v1/scoring/score`,
        headers: server.headers,
        body: (n: number) => JSON.stringify({ subject: `scale-load-${n}`, context: benchContext(n, 'DE') }),
        pid: server.process.pid,
      };
      await measure(target, Number(args.connections), 1); // warm-up
      const warmSize = await settledTreeSize(server);
      const bytesBefore = await databaseBytes(database);
      const pgBefore = await pgCounters(database.env.DATABASE_URL);
      const round = await measure(target, Number(args.connections), Number(args.duration));
      if (round.non2xx > 0 || round.errors > 0)
        throw new Error(
          `${target.name}: ${round.non2xx} answers not 2xx and ${round.errors} errors under load`,
        );
      const pgAfter = await pgCounters(database.env.DATABASE_URL);
      const loadedSize = await settledTreeSize(server);
      const scorings = loadedSize - warmSize;
      const bytesAfter = await databaseBytes(database);
      let pg: SizeResult['postgres'];
      if (pgBefore && pgAfter) {
        let cpuUs = 0;
        for (const [pid, after] of pgAfter.cpu) cpuUs += after - (pgBefore.cpu.get(pid) ?? 0);
        const delta = (key: string) => (Number(pgAfter.stats[key]) - Number(pgBefore.stats[key])) / scorings;
        pg = {
          backendCpuUsPerScoring: cpuUs / scorings,
          commitsPerScoring: delta('xact_commit'),
          rowsWrittenPerScoring: delta('tup_inserted') + delta('tup_updated') + delta('tup_deleted'),
          statementsPerScoring:
            pgBefore.statements !== undefined && pgAfter.statements !== undefined
              ? (pgAfter.statements - pgBefore.statements) / scorings
              : null,
          walBytesPerScoring: (pgAfter.walBytes - pgBefore.walBytes) / scorings,
          walFullPageImagesPerScoring: (pgAfter.walFullPageImages - pgBefore.walFullPageImages) / scorings,
        };
      }
      const latency = await commitLatency(server, Number(args['latency-seconds']));
      const cids = [...filled.sample, ...latency.cids];
      const tree = await settledTreeSize(server);
      const proofs = Number(args.proofs);
      const inclusionP99 = await getP99(
        server,
        proofs,
        (i) => `/v1/log/proofs/inclusion/${cids[(i * 7919) % cids.length]}`,
      );
      // From signed checkpoints (the fill's and those seen under load) to the latest.
      const signed = [...filled.checkpoints, ...latency.checkpoints].filter((n) => n > 0 && n < tree);
      const consistencyP99 = signed.length
        ? await getP99(
            server,
            proofs,
            (i) => `/v1/log/proofs/consistency?from=${signed[i % signed.length]}&to=${tree}`,
          )
        : Number.NaN;
      const run = await runRate(server);
      const result: SizeResult = {
        db,
        records: size,
        fillSeconds: filled.fillSeconds,
        fillInsertPerSecond: filled.insertPerSecond,
        sequencerLeavesPerSecond: filled.leavesPerSecond,
        bytesPerRecordFilled: size > 0 ? (filledBytes - emptyBytes) / size : null,
        readyMs,
        scoringRps: round.rps,
        scoringP99Ms: round.p99,
        scoringErrors: round.errors + round.non2xx,
        serverCpuUsPerScoring: round.cpuUs ?? null,
        serverMainThreadUsPerScoring: round.mainThreadUs ?? null,
        scoringsMeasured: scorings,
        bytesPerScoring: (bytesAfter - bytesBefore) / scorings,
        ...(pg && { postgres: pg }),
        commitToCheckpointP50Ms: latency.p50,
        commitToCheckpointP99Ms: latency.p99,
        inclusionProofP99Ms: inclusionP99,
        consistencyProofP99Ms: consistencyP99,
        runItemsPerSecond: run.itemsPerSecond,
        runServerCpuUsPerItem: run.cpuUsPerItem,
      };
      console.log(JSON.stringify(result));
      return result;
    } finally {
      await server.stop();
    }
  } finally {
    await database.drop();
  }
}

console.log(
  `bench/scale: sizes ${SIZES.join(', ')} on ${DATABASES.join(' and ')}; ${args.duration} s at ${args.connections} connections; Node ${process.version}`,
);
const results: SizeResult[] = [];
for (const db of DATABASES) for (const size of SIZES) results.push(await measureSize(db, size));
const output: ScaleResult = {
  measuredAt: new Date().toISOString(),
  node: process.version,
  options: { sizes: SIZES, duration: Number(args.duration), connections: Number(args.connections) },
  results,
};
writeFileSync(OUT, `${JSON.stringify(output, null, 2)}\n`);
const fixed = (value: number | null | undefined, digits = 0) =>
  value === null || value === undefined || Number.isNaN(value) ? '–' : Number(value.toFixed(digits));
console.table(
  results.map((r) => ({
    db: r.db,
    records: r.records,
    'score req/s': fixed(r.scoringRps),
    'score p99 ms': r.scoringP99Ms,
    'server CPU µs/scoring': fixed(r.serverCpuUsPerScoring),
    'pg CPU µs/scoring': fixed(r.postgres?.backendCpuUsPerScoring),
    'pg WAL B/scoring (FPI)':
      r.postgres?.walBytesPerScoring === undefined
        ? '–'
        : `${fixed(r.postgres.walBytesPerScoring)} (${fixed(r.postgres.walFullPageImagesPerScoring, 2)})`,
    'inclusion p99 ms': fixed(r.inclusionProofP99Ms, 1),
    'consistency p99 ms': fixed(r.consistencyProofP99Ms, 1),
    'commit→checkpoint p99 ms': fixed(r.commitToCheckpointP99Ms),
    'ready ms': fixed(r.readyMs),
    'run items/s': fixed(r.runItemsPerSecond),
    'B/scoring': fixed(r.bytesPerScoring),
    'B/record filled': fixed(r.bytesPerRecordFilled),
    'sequencer leaves/s': fixed(r.sequencerLeavesPerSecond),
  })),
);
console.log(`wrote ${OUT}`);
