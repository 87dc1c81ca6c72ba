/**
 * bench/erasure: erasing one subject among many records. A fresh database is filled with `--records` records
 * of one tenant (default 100,000; the goal is 1,000,000) through the storage path scoring uses
 * (`insertLogRecords`, each record keyed by its tenant-keyed subject hash), `--subject-records` of them
 * (1,000) of one subject, spread evenly; then an erasure of that subject is accepted and the server's
 * erasure worker (its default batch size) completes it. Prints the fill time and the erasure's time,
 * which the goal wants ≤ 2 s at 1,000 among 1,000,000 (the subject's records are found by an index, not a scan).
 *
 *   npm run bench:erasure -- [--db sqlite|postgres|both] [--records 100000] [--subject-records 1000]
 */
import { randomBytes } from 'node:crypto';
import { cidOfBytes } from '@scenario-scoring/engine';
import {
  ErasureWorker,
  insertLogRecords,
  newId,
  OutboxSignal,
  openStorage,
  silentLogger,
  TenantKeyedHash,
} from '@scenario-scoring/server';
import { benchArgs } from '../lib/bench-args.ts';
import { freshBenchDatabase } from '../lib/bench-server.ts';

const { values: args } = benchArgs(import.meta.url, {
  options: {
    db: { type: 'string', default: 'sqlite' },
    records: { type: 'string', default: '100000' },
    'subject-records': { type: 'string', default: '1000' },
  },
});
const total = Number(args.records);
const ofSubject = Number(args['subject-records']);
const kinds = args.db === 'both' ? ['sqlite', 'postgres'] : [args.db];
const TENANT = 'bench-erasure';
const SUBJECT = 'applicant-to-erase';
const FILL_BATCH = 5000;

console.log(`bench/erasure; Node ${process.version}; ${total} records, ${ofSubject} of one subject`);

/** A score-log/2-shaped record of `subject` (its own salt, so every record is its own CID). */
function recordOf(n: number, subject: string, scoredAt: string) {
  const bytes = new TextEncoder().encode(
    JSON.stringify({
      context: { jurisdiction: 'DE', on_time_ratio: (n % 100) / 100, utilization: (n % 9) / 10 },
      kind: 'score',
      model_version: 'scorecard-1',
      policy_id: 'default',
      policy_version: '1',
      request_id: `req_bench${n}`,
      result: { p10: 580, p50: 640, p90: 700 },
      salt: randomBytes(32).toString('base64url'),
      schema: 'score-log/2',
      scored_at: scoredAt,
      subject,
    }),
  );
  return { tenantId: TENANT, cid: cidOfBytes(bytes), bytes, requestId: `req_bench${n}`, subject };
}

for (const kind of kinds) {
  const database = await freshBenchDatabase(kind, 'bench-erasure');
  const storage = await openStorage({
    dataDir: database.env.DATA_DIR as string,
    databaseUrl: database.env.DATABASE_URL,
  });
  try {
    const keyedHash = new TenantKeyedHash(randomBytes(32));
    const subjectKey = (tenantId: string, subject: string) => keyedHash.hash('subject', tenantId, subject);
    const createdAt = new Date(Date.now() - 60_000);
    await storage.db
      .insertInto('tenants')
      .values({ id: TENANT, created_at: createdAt.toISOString() })
      .execute();
    const every = Math.max(1, Math.floor(total / ofSubject));
    const fillStarted = performance.now();
    let subjectCount = 0;
    for (let start = 0; start < total; start += FILL_BATCH) {
      const records = [];
      for (let n = start; n < Math.min(total, start + FILL_BATCH); n++) {
        const mine = n % every === 0 && subjectCount < ofSubject;
        if (mine) subjectCount += 1;
        records.push({
          ...recordOf(n, mine ? SUBJECT : `applicant-${n}`, createdAt.toISOString()),
          createdAt,
        });
      }
      await insertLogRecords(storage, records, subjectKey);
    }
    const fillSeconds = (performance.now() - fillStarted) / 1000;
    console.log(
      `${kind}: filled ${total} records (${subjectCount} of the subject) in ${fillSeconds.toFixed(1)} s`,
    );

    await storage.db
      .insertInto('erasures')
      .values({
        id: newId('era'),
        tenant_id: TENANT,
        kind: 'subject',
        status: 'pending',
        subject: SUBJECT,
        subject_key: subjectKey(TENANT, SUBJECT),
        before: null,
        created_at: new Date().toISOString(),
      })
      .execute();
    const worker = new ErasureWorker({
      storage,
      config: {
        retention: undefined,
        pollIntervalMs: 1000,
        retentionCheckIntervalMs: 3_600_000,
        batchSize: 500,
        leaseMs: 60_000,
        settleMs: 0,
        // Compacted at the end of the round, as the erasure's time has always included.
        compactIntervalMs: 0,
        maxPendingPerTenant: 0,
      },
      subjectKey,
      erasureQueue: new OutboxSignal(),
      outbox: new OutboxSignal(),
      clock: { now: () => new Date() },
      logger: silentLogger,
    });
    const started = performance.now();
    const completed = await worker.runOnce();
    const seconds = (performance.now() - started) / 1000;
    const done = await storage.db
      .selectFrom('erasures')
      .select(['status', 'log_records'])
      .where('tenant_id', '=', TENANT)
      .executeTakeFirstOrThrow();
    if (completed !== 1 || done.status !== 'completed' || Number(done.log_records) !== subjectCount) {
      throw new Error(`the erasure did not complete as expected: ${JSON.stringify(done)}`);
    }
    console.log(
      `${kind}: erased ${done.log_records} records of one subject among ${total} in ${seconds.toFixed(2)} s (goal ≤ 2 s at 1,000 among 1,000,000), compaction included`,
    );
  } finally {
    await storage.close();
    await database.drop();
  }
}
