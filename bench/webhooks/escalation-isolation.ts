/**
 * bench/webhooks escalation-isolation: what one tenant's webhook fan-out costs another tenant's scoring.
 * Tenant `hostile` registers `--webhooks` webhooks taking `policy.escalated`, to receivers that accept the
 * connection and never answer, then posts `--runs` runs of `--items` items at once, twice: first with a
 * context that is not escalated (the control: the runs alone), then with one that escalates every item
 * (so every item's event fans out to every webhook). Tenant `victim` meanwhile scores at a fixed rate
 * (`--rate` requests/s, open loop), and its latencies are reported for a quiet phase before, and for each
 * phase until its runs completed and every event was fanned out (looked at each second; at most
 * `--seconds`), with the time that took.
 *
 *   npm run bench:escalation-isolation -- [--db sqlite|postgres|both] [--webhooks 48] [--runs 10]
 *     [--items 1000] [--format json|ndjson] [--rate 20] [--quiet 8] [--seconds 120] [--windows 0]
 *     [--ports <first of 49 consecutive ports>] [--main <another build's dist/main.js>]
 *
 * `--main` runs another build (its `cli.js` beside it) to compare two builds on the same machine.
 */

import { createServer, type Server, type Socket } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { freePort } from '@scenario-scoring/testkit';
import pg from 'pg';
import { benchArgs } from '../lib/bench-args.ts';
import { type BenchServer, createApiKey, freshBenchDatabase, startServerOn } from '../lib/bench-server.ts';
import { fixedRateVictim, victimSummary } from '../lib/victim.ts';

const { values: args } = benchArgs(import.meta.url, {
  options: {
    db: { type: 'string', default: 'sqlite' },
    webhooks: { type: 'string', default: '48' },
    runs: { type: 'string', default: '10' },
    items: { type: 'string', default: '1000' },
    format: { type: 'string', default: 'json' },
    rate: { type: 'string', default: '20' },
    quiet: { type: 'string', default: '8' },
    seconds: { type: 'string', default: '120' },
    windows: { type: 'string', default: '0' },
    ports: { type: 'string' },
    main: { type: 'string' },
  },
});
const WEBHOOKS = Number(args.webhooks);
const RUNS = Number(args.runs);
const ITEMS = Number(args.items);
const RATE = Number(args.rate);
const QUIET_MS = Number(args.quiet) * 1000;
const PHASE_MS = Number(args.seconds) * 1000;
const NDJSON = args.format === 'ndjson';
/** The server's port, then the receivers' (consecutive), or free ports. */
const FIRST_PORT = args.ports === undefined ? undefined : Number(args.ports);
const port = async (n: number) => (FIRST_PORT === undefined ? freePort() : FIRST_PORT + n);

const CALM = { jurisdiction: 'DE', on_time_ratio: 0.9, utilization: 0.3, history_months: 60 };
const ESCALATING = { jurisdiction: 'DE', on_time_ratio: 0.3, utilization: 0.99 };

function summary(name: string, latencies: number[], failures: number): string {
  return victimSummary(name, latencies, failures, 11);
}

/** Receivers that accept every connection and never answer (their sockets destroyed on close). */
async function silentReceivers(count: number): Promise<{ urls: string[]; close: () => Promise<void> }> {
  const servers: Server[] = [];
  const sockets = new Set<Socket>();
  const urls: string[] = [];
  for (let n = 0; n < count; n++) {
    const server = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {});
      socket.resume();
    });
    const at = await port(1 + n);
    await new Promise<void>((resolve) => server.listen(at, '127.0.0.1', resolve));
    servers.push(server);
    urls.push(`http://127.0.0.1:${at}/hook`);
  }
  return {
    urls,
    async close() {
      for (const socket of sockets) socket.destroy();
      await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
    },
  };
}

function victim(server: BenchServer, key: string, until: () => boolean) {
  return fixedRateVictim(server, key, RATE, until);
}

/**
 * The events not fanned out yet, read from the database by a connection of this process (SQLite: the file,
 * read-only; PostgreSQL: DATABASE_URL), not through the server's metrics, whose scrape would take the
 * server's one SQLite connection to count a backlog of deliveries.
 */
async function undispatchedEvents(
  env: Record<string, string>,
): Promise<{ count: () => Promise<number>; close: () => Promise<void> }> {
  const query = 'select count(*) as n from events where dispatched_at is null';
  if (env.DATABASE_URL !== undefined) {
    const client = new pg.Client({ connectionString: env.DATABASE_URL });
    await client.connect();
    return {
      count: async () => Number((await client.query<{ n: string }>(query)).rows[0]?.n),
      close: () => client.end(),
    };
  }
  const file = join(env.DATA_DIR as string, 'scenario-scoring.sqlite');
  return {
    async count() {
      const db = new DatabaseSync(file, { readOnly: true });
      try {
        return Number((db.prepare(query).get() as { n: number }).n);
      } finally {
        db.close();
      }
    },
    close: async () => {},
  };
}

/** Posts the hostile tenant's runs at once; resolves with their ids. */
async function postRuns(server: BenchServer, key: string, context: object, phase: string): Promise<string[]> {
  return Promise.all(
    Array.from({ length: RUNS }, async (_, r) => {
      const items = Array.from({ length: ITEMS }, (_, i) => ({ subject: `${phase}-${r}-${i}`, context }));
      const answer = await fetch(`${server.url}/v1/scoring/runs`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': NDJSON ? 'application/x-ndjson' : 'application/json',
        },
        body: NDJSON ? items.map((item) => `${JSON.stringify(item)}\n`).join('') : JSON.stringify({ items }),
      });
      if (answer.status !== 202)
        throw new Error(`POST /v1/scoring/runs: ${answer.status} ${await answer.text()}`);
      return ((await answer.json()) as { id: string }).id;
    }),
  );
}

/** True once every run completed (their escalated items counted into `escalated`). */
async function runsDone(server: BenchServer, key: string, ids: string[], escalated: { n: number }) {
  let total = 0;
  for (const id of ids) {
    const answer = await fetch(`${server.url}/v1/scoring/runs/${id}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    const run = (await answer.json()) as { status: string; counts: { escalated: number } };
    if (run.status !== 'completed' && run.status !== 'failed') return false;
    total += run.counts.escalated;
  }
  escalated.n = total;
  return true;
}

async function phase(
  name: string,
  context: object,
  server: BenchServer,
  keys: { hostile: string; victim: string },
  waiting: { count: () => Promise<number> },
) {
  const started = performance.now();
  const deadline = started + PHASE_MS;
  let doneAt: number | undefined;
  const escalated = { n: 0 };
  const watcher = (async () => {
    const ids = await postRuns(server, keys.hostile, context, name);
    while (performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      if ((await runsDone(server, keys.hostile, ids, escalated)) && (await waiting.count()) === 0) {
        doneAt = performance.now();
        return;
      }
    }
  })();
  const measured = await victim(
    server,
    keys.victim,
    () => doneAt !== undefined || performance.now() > deadline,
  );
  await watcher;
  const seconds = ((doneAt ?? performance.now()) - started) / 1000;
  const lines = [
    `  ${summary(name, measured.latencies, measured.failures)}  (${doneAt === undefined ? 'not done after' : 'done in'} ${seconds.toFixed(1)} s, ${escalated.n} items escalated)`,
  ];
  const window = Number(args.windows);
  if (window > 0)
    for (let from = 0; from < seconds; from += window) {
      const inWindow = measured.timeline
        .filter(([at]) => at >= from && at < from + window)
        .map(([, ms]) => ms);
      lines.push(`    ${summary(`${from}-${from + window}s`, inWindow, 0)}`);
    }
  return lines;
}

async function bench(db: string) {
  const receivers = await silentReceivers(WEBHOOKS);
  const database = await freshBenchDatabase(db, 'bench-escalation');
  const env = { NODE_ENV: 'production', RATE_LIMIT_PER_SECOND: '0', ...database.env };
  const main = args.main === undefined ? undefined : resolve(args.main);
  const cli = main === undefined ? undefined : join(dirname(main), 'cli.js');
  const keys = { hostile: createApiKey(env, 'hostile', cli), victim: createApiKey(env, 'victim', cli) };
  const server = await startServerOn(
    database,
    keys.victim,
    {
      WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
      ...(FIRST_PORT !== undefined && { PORT: String(FIRST_PORT) }),
    },
    main,
  );
  const waiting = await undispatchedEvents(database.env);
  try {
    for (const url of receivers.urls) {
      const answer = await fetch(`${server.url}/v1/webhooks/register`, {
        method: 'POST',
        headers: { authorization: `Bearer ${keys.hostile}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url, events: ['policy.escalated'] }),
      });
      if (answer.status !== 201) throw new Error(`register: ${answer.status} ${await answer.text()}`);
    }
    const quietEnd = performance.now() + QUIET_MS;
    const quiet = await victim(server, keys.victim, () => performance.now() > quietEnd);
    const control = await phase('control', CALM, server, keys, waiting);
    const escalating = await phase('escalating', ESCALATING, server, keys, waiting);
    console.log(
      [
        `bench/webhooks escalation-isolation (${db}${main === undefined ? '' : `, ${main}`}): ${WEBHOOKS} silent webhooks, ${RUNS} ${args.format} runs of ${ITEMS} items at once, victim at ${RATE} req/s, Node ${process.version}:`,
        `  ${summary('quiet', quiet.latencies, quiet.failures)}`,
        ...control,
        ...escalating,
      ].join('\n'),
    );
  } finally {
    await waiting.close();
    await server.stop();
    await database.drop();
    await receivers.close();
  }
}

for (const db of args.db === 'both' ? ['sqlite', 'postgres'] : [args.db as string]) await bench(db);
