/**
 * bench/webhooks: the delivery engine of one instance — the server's own workers (createWorkers), in this
 * process, on a fresh SQLite or PostgreSQL database — delivering signed events to a local receiver that
 * answers 200, against the ceiling: the same receiver driven by a plain undici loop with the same
 * concurrency. Two measures per database:
 *
 * - throughput: a backlog of `--events` committed events, fanned out, claimed, sent and recorded; deliveries/s
 *   from the worker's start to the end of the last attempt;
 * - latency: events committed at `--rate` per second for `--seconds` (each commit notifies the outbox, as a
 *   completed run does); the time from each event's commit to the start of its first attempt, p50/p99.
 *
 *   npm run bench:webhooks -- [--events 20000] [--rate 1000] [--seconds 5] [--concurrency 64] [--db sqlite|postgres|both]
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  createMetrics,
  createWorkers,
  type Features,
  generateWebhookSecret,
  insertEvents,
  insertNewWebhook,
  jsonLogger,
  loadConfig,
  NoteSigner,
  newEvent,
  newId,
  openStorage,
  SecretBox,
  type Storage,
  systemClock,
  webhookHeaders,
  wireFeatures,
} from '@scenario-scoring/server';
import { freePort } from '@scenario-scoring/testkit';
import { Agent, request } from 'undici';
import { benchArgs } from '../lib/bench-args.ts';
import { freshBenchDatabase } from '../lib/bench-server.ts';
import { startProcess } from '../lib/child-process.ts';

const { values: args } = benchArgs(import.meta.url, {
  options: {
    events: { type: 'string', default: '20000' },
    rate: { type: 'string', default: '1000' },
    seconds: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '64' },
    db: { type: 'string', default: 'both' },
  },
});
const EVENTS = Number(args.events);
const RATE = Number(args.rate);
const SECONDS = Number(args.seconds);
const CONCURRENCY = Number(args.concurrency);
const ROOT = new URL('../../', import.meta.url).pathname;
const TICK_MS = 10;

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
const round = (value: number) => Math.round(value * 10) / 10;
const cpuMicros = (usage: NodeJS.CpuUsage) => usage.user + usage.system;

/** The ceiling: `count` signed POSTs of a typical payload, `concurrency` at a time, through a plain undici Agent. */
async function plainUndiciLoop(url: string, count: number) {
  const agent = new Agent({ keepAliveTimeout: 4_000 });
  const event = newEvent('bench', 'webhook.test', { webhook_id: newId('wh'), message: 'bench' }, new Date());
  const secret = generateWebhookSecret();
  let started = 0;
  const latencies: number[] = [];
  const begin = performance.now();
  const cpu = process.cpuUsage();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (started < count) {
        started += 1;
        const t = performance.now();
        const headers = webhookHeaders([secret], event.id, Math.floor(Date.now() / 1000), event.payload);
        const response = await request(url, {
          method: 'POST',
          dispatcher: agent,
          headers: { 'content-type': 'application/json', ...headers },
          body: event.payload,
        });
        await response.body.text();
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - begin) / 1000;
  const cpuUs = cpuMicros(process.cpuUsage(cpu));
  await agent.close();
  latencies.sort((a, b) => a - b);
  return {
    perSecond: count / seconds,
    cpuUsPerDelivery: cpuUs / count,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
  };
}

/** A webhook of `tenantId` to `url`, with a sealed secret, created a second ago (before every event). */
function createWebhook(storage: Storage, secretBox: SecretBox, tenantId: string, url: string) {
  const sealed = secretBox.seal(generateWebhookSecret());
  const created = new Date(Date.now() - 1000);
  return storage.db
    .transaction()
    .execute((trx) => insertNewWebhook(trx, { tenantId, url, events: ['*'] }, sealed, created));
}

/** Commits `count` events of `tenantId` in one transaction and wakes the workers; returns their ids and the commit time. */
async function commitEvents({ storage, outbox }: Features, tenantId: string, count: number) {
  const now = new Date();
  const events = Array.from({ length: count }, (_, n) =>
    newEvent(tenantId, 'webhook.test', { webhook_id: newId('wh'), message: `bench ${n}` }, now),
  );
  await storage.db.transaction().execute((trx) => insertEvents(trx, events));
  const committedAt = Date.now();
  outbox.notify();
  return { ids: events.map((event) => event.id), committedAt };
}

async function waitForSucceeded(storage: Storage, tenantId: string, count: number, timeoutMs = 300_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const row = await storage.db
      .selectFrom('deliveries')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('tenant_id', '=', tenantId)
      .where('status', '=', 'succeeded')
      .executeTakeFirstOrThrow();
    if (Number(row.n) >= count) return;
    if (Date.now() > deadline) throw new Error(`only ${row.n} of ${count} deliveries succeeded in time`);
    await sleep(100);
  }
}

/** The first attempt of each delivery of `tenantId`: its event and when it started and ended. */
async function firstAttempts(storage: Storage, tenantId: string) {
  const rows = await storage.db
    .selectFrom('delivery_attempts as a')
    .innerJoin('deliveries as d', 'd.id', 'a.delivery_id')
    .select(['d.event_id', 'a.attempted_at', 'a.duration_ms'])
    .where('d.tenant_id', '=', tenantId)
    .execute();
  const first = new Map<string, { start: number; end: number }>();
  for (const row of rows) {
    const start = Date.parse(row.attempted_at);
    const seen = first.get(row.event_id);
    if (!seen || start < seen.start) first.set(row.event_id, { start, end: start + row.duration_ms });
  }
  return first;
}

async function measureEngine(kind: 'sqlite' | 'postgres', receiverUrl: string) {
  const secretsKey = randomBytes(32).toString('base64');
  const database = await freshBenchDatabase(kind, 'bench-webhooks', secretsKey);
  const config = loadConfig({
    ...database.env,
    WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
    WEBHOOK_CONCURRENCY: String(CONCURRENCY),
  });
  const storage = await openStorage({ dataDir: config.dataDir, databaseUrl: config.databaseUrl });
  const secretBox = new SecretBox(Buffer.from(secretsKey, 'base64'));
  const features = wireFeatures(storage, { secret: Buffer.from(secretsKey, 'base64') });
  const workers = createWorkers({
    features,
    config,
    secretBox,
    logger: jsonLogger,
    clock: systemClock,
    metrics: createMetrics({ processMetrics: false }),
    logSigner: new NoteSigner('bench', randomBytes(32)),
  });
  try {
    await createWebhook(storage, secretBox, 'throughput', receiverUrl);
    await createWebhook(storage, secretBox, 'latency', receiverUrl);
    for (let done = 0; done < EVENTS; done += 1000)
      await commitEvents(features, 'throughput', Math.min(1000, EVENTS - done));

    const start = Date.now();
    const cpu = process.cpuUsage();
    for (const worker of workers) worker.start();
    await waitForSucceeded(storage, 'throughput', EVENTS);
    // This process's CPU (all its threads) over the backlog, its polling of the count included.
    const cpuUsPerDelivery = cpuMicros(process.cpuUsage(cpu)) / EVENTS;
    const ends = [...(await firstAttempts(storage, 'throughput')).values()].map((a) => a.end);
    const perSecond = EVENTS / ((Math.max(...ends) - start) / 1000);

    const committed = new Map<string, number>();
    const perTick = Math.max(1, Math.round((RATE * TICK_MS) / 1000));
    const ticks = Math.round((SECONDS * 1000) / TICK_MS);
    const begin = performance.now();
    for (let tick = 0; tick < ticks; tick++) {
      const { ids, committedAt } = await commitEvents(features, 'latency', perTick);
      for (const id of ids) committed.set(id, committedAt);
      const wait = begin + (tick + 1) * TICK_MS - performance.now();
      if (wait > 0) await sleep(wait);
    }
    const offered = committed.size / ((performance.now() - begin) / 1000);
    await waitForSucceeded(storage, 'latency', committed.size);
    const latencies = [...(await firstAttempts(storage, 'latency'))]
      .map(([eventId, attempt]) => attempt.start - (committed.get(eventId) as number))
      .sort((a, b) => a - b);
    return {
      perSecond,
      cpuUsPerDelivery,
      offered,
      p50: percentile(latencies, 0.5),
      p99: percentile(latencies, 0.99),
      max: latencies.at(-1) ?? 0,
    };
  } finally {
    await Promise.all(workers.map((worker) => worker.stop()));
    await features.close();
    await storage.close();
    await database.drop();
  }
}

const port = await freePort();
const receiver = await startProcess([join(ROOT, 'bench/lib/bare-server.ts')], {
  env: { PORT: String(port), BARE_BODY: 'ok' },
  url: `http://127.0.0.1:${port}`,
});
try {
  const url = `${receiver.url}/hook`;
  console.log(
    `bench/webhooks: ${EVENTS} events backlog, then ${RATE}/s for ${SECONDS} s; concurrency ${CONCURRENCY}; Node ${process.version}`,
  );
  await plainUndiciLoop(url, 2000); // warm-up, not reported
  const ceiling = await plainUndiciLoop(url, EVENTS);
  const rows: Record<string, unknown>[] = [
    {
      target: 'plain undici loop (ceiling)',
      'deliveries/s': Math.round(ceiling.perSecond),
      'ratio to ceiling': 1,
      'CPU µs/delivery': round(ceiling.cpuUsPerDelivery),
      'request p50 ms': round(ceiling.p50),
      'request p99 ms': round(ceiling.p99),
    },
  ];
  const kinds =
    args.db === 'both' ? (['sqlite', 'postgres'] as const) : ([args.db] as ('sqlite' | 'postgres')[]);
  for (const kind of kinds) {
    const engine = await measureEngine(kind, url);
    rows.push({
      target: `delivery engine (${kind})`,
      'deliveries/s': Math.round(engine.perSecond),
      'ratio to ceiling': Number((engine.perSecond / ceiling.perSecond).toFixed(3)),
      'CPU µs/delivery': round(engine.cpuUsPerDelivery),
      'commit→first attempt at rate/s': Math.round(engine.offered),
      'p50 ms': engine.p50,
      'p99 ms': engine.p99,
      'max ms': engine.max,
    });
    console.log(`${kind}: done`);
  }
  console.table(rows);
} finally {
  await receiver.stop();
}
