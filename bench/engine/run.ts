/**
 * bench/engine: the engine's whole pipeline, `scoreAndLog` (validate, score, explain, levers, canonical
 * record, CID), against its floor in the same run: `JSON.stringify` + sha256 of an equal, already built
 * record. Prints µs/op of each (and of the pipeline's parts) and the ratio of `scoreAndLog` to the floor.
 *
 * `--compare <other build's packages/engine/dist/index.js>` adds that build's `scoreAndLog` as a task, to
 * compare two versions of the engine in one run.
 *
 *   npm run bench:engine -- [--time 1000] [--records 1024] [--compare <index.js>]
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  buildLogRecordV2,
  canonicalBytes,
  cidOfBytes,
  effectivePolicy,
  type LogRecordStamp,
  type LogRecordV2,
  logRecordBytes,
  MODEL_VERSION,
  scoreAndLog,
  scoreScorecard2,
} from '@scenario-scoring/engine';
import { Bench } from 'tinybench';
import { benchArgs } from '../lib/bench-args.ts';
import { benchContext } from '../lib/bench-inputs.ts';

const { values: args } = benchArgs(import.meta.url, {
  options: {
    time: { type: 'string', default: '1000' },
    records: { type: 'string', default: '1024' },
    compare: { type: 'string' },
  },
});
const TIME_MS = Number(args.time);
const RECORDS = Number(args.records);

const JURISDICTIONS = ['DE', 'US', 'US-CA', 'FR', 'GB'];
const inputs = Array.from({ length: RECORDS }, (_, i) => ({
  subject: `bench-engine-${i}`,
  // Varied inputs, the same as bench/runs sends.
  context: benchContext(i, JURISDICTIONS[i % JURISDICTIONS.length] as string),
}));
// Each scoring's stamp (identity, time, salt), made by the server outside the engine: made once here.
const stamps: LogRecordStamp[] = inputs.map((_, i) => ({
  identity: { kind: 'run_item', run_id: 'run_01JZ4VB2C4D6E8F0G2H4J6K8M0', item: i },
  scored_at: new Date(Date.UTC(2026, 10, 26, 9, 30, 0, i % 1000)).toISOString(),
  salt: randomBytes(32).toString('base64url'),
}));
// The floor's records: equal to what scoreAndLog logs (score-log/2), built once outside the timed loop.
const records = inputs.map(({ subject, context }, i) => {
  const policy = effectivePolicy(context.jurisdiction);
  return buildLogRecordV2({
    ...(stamps[i] as LogRecordStamp),
    model_version: MODEL_VERSION,
    policy_id: policy.policy_id,
    policy_version: policy.policy_version,
    subject,
    context,
    result: scoreScorecard2(context, policy),
  });
});
const bytes = records.map((record) => canonicalBytes(record));

let i = 0;
const next = () => (i = (i + 1) % RECORDS);
let sink: unknown;
const bench = new Bench({ time: TIME_MS, warmup: true });
bench
  .add('floor: JSON.stringify + sha256', () => {
    const n = next();
    sink = createHash('sha256').update(JSON.stringify(records[n])).digest();
  })
  .add('scoreAndLog', () => {
    const n = next();
    const input = inputs[n] as (typeof inputs)[number];
    sink = scoreAndLog(input.subject, input.context, stamps[n] as LogRecordStamp);
  })
  .add('  scoreScorecard2 (with policy)', () => {
    const { context } = inputs[next()] as (typeof inputs)[number];
    sink = scoreScorecard2(context, effectivePolicy(context.jurisdiction));
  })
  .add('  logRecordBytes (the record shape)', () => {
    sink = logRecordBytes(records[next()] as LogRecordV2);
  })
  .add('  canonicalBytes (generic)', () => {
    sink = canonicalBytes(records[next()]);
  })
  .add('  cidOfBytes', () => {
    sink = cidOfBytes(bytes[next()] as Uint8Array);
  });

if (args.compare !== undefined) {
  const other = (await import(args.compare)) as { scoreAndLog: typeof scoreAndLog };
  bench.add('scoreAndLog (before)', () => {
    const n = next();
    const input = inputs[n] as (typeof inputs)[number];
    sink = other.scoreAndLog(input.subject, input.context, stamps[n] as LogRecordStamp);
  });
}

console.log(
  `bench/engine: ${bench.tasks.length} tasks × ${TIME_MS} ms, ${RECORDS} distinct records, Node ${process.version}`,
);
await bench.run();
void sink;

const usPerOp = (name: string): number => {
  const result = bench.getTask(name)?.result;
  if (result === undefined || !('latency' in result)) throw new Error(`task ${name} did not run`);
  return result.latency.mean * 1000;
};
const floor = usPerOp('floor: JSON.stringify + sha256');
console.table(
  bench.tasks.map((task) => ({
    task: task.name,
    'µs/op': Number(usPerOp(task.name).toFixed(2)),
    'ratio to floor': Number((usPerOp(task.name) / floor).toFixed(2)),
  })),
);
console.log(
  `scoreAndLog ${usPerOp('scoreAndLog').toFixed(2)} µs/op, floor ${floor.toFixed(2)} µs/op, ratio ${(usPerOp('scoreAndLog') / floor).toFixed(2)} (goal ≤ 1.5)`,
);
