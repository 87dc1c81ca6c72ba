/**
 * bench/log: the verifiable log's sequencer.
 *  1. Throughput: N records committed directly, then sequenced by the server's LogSequencer (the built
 *     server's code) in batches of LOG_SEQUENCER_BATCH's default; prints leaves sequenced per second.
 *  2. Latency: the built server at the default LOG_CHECKPOINT_INTERVAL (1 s) under steady scoring; polls
 *     the latest checkpoint every 10 ms and prints the p50/p99 from a scoring's 200 (its record committed)
 *     to the first signed checkpoint whose tree holds its leaf.
 *  3. Cost on the hot path: POST /v1/scoring/score with sequencing every second vs. sequencing idle (an
 *     interval of one hour), alternated over rounds; prints requests/s and the ratio.
 *
 *   npm run bench:log -- [--db sqlite|postgres] [--records 200000] [--seconds 10] [--rounds 3] [--duration 5]
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { cidOfBytes } from '@scenario-scoring/engine';
import {
  CheckpointSigner,
  insertLogRows,
  LogSequencer,
  openStorage,
  silentLogger,
} from '@scenario-scoring/server';
import { freshBenchDatabase, startBenchServer } from '../lib/bench-server.ts';
import { measure, median, printSummary, type Round } from '../lib/load-report.ts';

const { values: args } = parseArgs({
  options: {
    db: { type: 'string', default: 'sqlite' },
    records: { type: 'string', default: '200000' },
    seconds: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '3' },
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '50' },
  },
});

console.log(`bench/log (${args.db}); Node ${process.version}`);

// 1. Sequencing throughput.
{
  const count = Number(args.records);
  const database = await freshBenchDatabase(args.db, 'bench-log');
  const storage = await openStorage({
    dataDir: database.env.DATA_DIR as string,
    databaseUrl: database.env.DATABASE_URL,
  });
  try {
    const now = new Date().toISOString();
    for (let start = 0; start < count; start += 10_000) {
      const rows: Parameters<typeof insertLogRows>[1][number][] = [];
      for (let n = start; n < Math.min(count, start + 10_000); n++) {
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
      await storage.db.transaction().execute((trx) => insertLogRows(trx, rows));
    }
    const sequencer = new LogSequencer({
      storage,
      signer: new CheckpointSigner('bench', randomBytes(32)),
      config: { origin: 'bench.example/log', checkpointIntervalMs: 1000, maxBatch: 100_000 },
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
      `sequencing: ${sequenced} leaves in ${seconds.toFixed(2)} s = ${Math.round(sequenced / seconds)} leaves/s (goal ≥ 100000/s on SQLite)`,
    );
  } finally {
    await storage.close();
    await database.drop();
  }
}

// 2. Commit to inclusion in a signed checkpoint, at the default interval.
{
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
{
  const context = { jurisdiction: 'DE', on_time_ratio: 0.96, utilization: 0.35, history_months: 84 };
  const on = await startBenchServer(args.db, 'bench-log-on');
  const idle = await startBenchServer(args.db, 'bench-log-idle', { LOG_CHECKPOINT_INTERVAL: '1h' });
  try {
    const target = (name: string, server: typeof on) => ({
      name,
      url: `${server.url}/v1/scoring/score`,
      headers: server.headers,
      body: (n: number) => JSON.stringify({ subject: `bench-${name}-${n}`, context }),
    });
    const targets = [target('sequencing idle', idle), target('sequencing on', on)];
    for (const warm of targets) await measure(warm, Number(args.connections), 1);
    const rounds: Round[] = [];
    for (let round = 0; round < Number(args.rounds); round++) {
      for (const each of targets)
        rounds.push(await measure(each, Number(args.connections), Number(args.duration)));
    }
    printSummary(rounds, 'sequencing idle');
    const ratio =
      median(rounds.filter((r) => r.target === 'sequencing on').map((r) => r.rps)) /
      median(rounds.filter((r) => r.target === 'sequencing idle').map((r) => r.rps));
    console.log(`sequencing on / idle: ${(ratio * 100).toFixed(1)} % of the requests/s (goal ≥ 95 %)`);
  } finally {
    await Promise.all([on.stop(), idle.stop()]);
  }
}
