/**
 * bench/disk: bytes on disk per scoring. Scores N subjects through the built server (POST
 * /v1/scoring/score, `--concurrency` in flight), waits for the log to sequence them, then prints the
 * database's size per scoring split by table and index:
 *  - SQLite: the `dbstat` virtual table (pages of each table and index, free pages apart);
 *  - PostgreSQL: pg_relation_size (heap), the TOAST relation, and pg_relation_size of each index.
 * Two workloads: `plain` (inputs that no policy escalates: no event) and `escalated` (thin files under FR's
 * default policy, with a webhook subscribed to `policy.escalated` on a local receiver answering 204: every
 * scoring also writes its event, a delivery and its attempt).
 *
 *   npm run bench:disk -- [--db sqlite|postgres|both] [--scorings 20000] [--concurrency 32]
 *                         [--workloads plain,escalated] [--settle 3]
 */

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { benchArgs } from '../lib/bench-args.ts';
import { benchContext } from '../lib/bench-inputs.ts';
import { startBenchServer } from '../lib/bench-server.ts';

const { values: args } = benchArgs(import.meta.url, {
  options: {
    db: { type: 'string', default: 'both' },
    scorings: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '32' },
    workloads: { type: 'string', default: 'plain,escalated' },
    settle: { type: 'string', default: '3' },
  },
});
const N = Number(args.scorings);
const CONCURRENCY = Number(args.concurrency);
const databases = args.db === 'both' ? ['sqlite', 'postgres'] : [args.db];
const workloads = args.workloads.split(',');

/** The request body of scoring `i` of `workload`. */
function body(workload: string, i: number): string {
  const context = workload === 'escalated' ? { jurisdiction: 'FR' } : benchContext(i * 10 + 1, 'DE');
  return JSON.stringify({ subject: `bench-subject-${i}`, context });
}

/** One relation's bytes: `table` the table it belongs to, `kind` heap/toast/index/free. */
interface Relation {
  name: string;
  table: string;
  kind: string;
  bytes: number;
}

function sqliteSizes(dataDir: string): Relation[] {
  const db = new DatabaseSync(join(dataDir, 'scenario-scoring.sqlite'), { readOnly: true });
  try {
    const rows = db
      .prepare(
        `SELECT d.name AS name, coalesce(m.tbl_name, d.name) AS tbl, coalesce(m.type, 'internal') AS type,
                sum(d.pgsize) AS bytes
           FROM dbstat d LEFT JOIN sqlite_schema m ON m.name = d.name GROUP BY d.name`,
      )
      .all() as { name: string; tbl: string; type: string; bytes: number }[];
    const pageSize = (db.prepare('PRAGMA page_size').get() as { page_size: number }).page_size;
    const free = (db.prepare('PRAGMA freelist_count').get() as { freelist_count: number }).freelist_count;
    return [
      ...rows.map((r) => ({
        name: r.name,
        table: r.tbl,
        kind: r.type === 'index' ? 'index' : 'table',
        bytes: Number(r.bytes),
      })),
      { name: '(free pages)', table: '(free)', kind: 'free', bytes: free * pageSize },
    ];
  } finally {
    db.close();
  }
}

async function postgresSizes(url: string): Promise<Relation[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('VACUUM ANALYZE');
    const { rows } = await client.query<{ name: string; tbl: string; kind: string; bytes: string }>(
      `SELECT c.relname AS name, c.relname AS tbl, 'table' AS kind, pg_relation_size(c.oid) AS bytes
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind = 'r'
       UNION ALL
       SELECT c.relname || ' (toast)', c.relname, 'toast',
              pg_total_relation_size(c.reltoastrelid)
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.reltoastrelid <> 0
       UNION ALL
       SELECT i.relname, t.relname, 'index', pg_relation_size(i.oid)
         FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
         JOIN pg_namespace n ON n.oid = t.relnamespace
        WHERE n.nspname = 'public'`,
    );
    return rows.map((r) => ({ name: r.name, table: r.tbl, kind: r.kind, bytes: Number(r.bytes) }));
  } finally {
    await client.end();
  }
}

async function measureOne(db: string, workload: string): Promise<void> {
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((done) => receiver.listen(0, '127.0.0.1', done));
  const server = await startBenchServer(db, `disk-${workload}`, { WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' });
  try {
    if (workload === 'escalated') {
      const { port } = receiver.address() as AddressInfo;
      const created = await fetch(`${server.url}/v1/webhooks/register`, {
        method: 'POST',
        headers: server.headers,
        body: JSON.stringify({ url: `http://127.0.0.1:${port}/hook`, events: ['policy.escalated'] }),
      });
      if (created.status !== 201) throw new Error(`webhook: ${created.status} ${await created.text()}`);
    }
    let next = 0;
    let failed = 0;
    const started = performance.now();
    const worker = async () => {
      for (;;) {
        const i = next++;
        if (i >= N) return;
        const res = await fetch(`${server.url}/v1/scoring/score`, {
          method: 'POST',
          headers: server.headers,
          body: body(workload, i),
        });
        if (res.status !== 200) failed++;
        await res.arrayBuffer();
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    const seconds = (performance.now() - started) / 1000;
    await sleep(Number(args.settle) * 1000);
    const env = server.env;
    const relations =
      db === 'sqlite' ? sqliteSizes(env.DATA_DIR as string) : await postgresSizes(env.DATABASE_URL as string);
    const total = relations.reduce((sum, r) => sum + r.bytes, 0);
    console.log(
      `\n${db}, ${workload}: ${N} scorings in ${seconds.toFixed(1)} s (${failed} not 200); ` +
        `${(total / 1e6).toFixed(2)} MB, ${(total / N).toFixed(0)} B per scoring`,
    );
    const byTable = new Map<string, Relation[]>();
    for (const r of relations) byTable.set(r.table, [...(byTable.get(r.table) ?? []), r]);
    const tables = [...byTable.entries()]
      .map(([table, rs]) => ({ table, rs, bytes: rs.reduce((s, r) => s + r.bytes, 0) }))
      .filter((t) => t.bytes / N >= 1)
      .sort((a, b) => b.bytes - a.bytes);
    for (const { table, rs, bytes } of tables) {
      console.log(`  ${table.padEnd(34)} ${(bytes / N).toFixed(0).padStart(6)} B/scoring`);
      for (const r of rs.filter((x) => x.bytes / N >= 1).sort((a, b) => b.bytes - a.bytes)) {
        console.log(`    ${r.kind.padEnd(6)} ${r.name.padEnd(40)} ${(r.bytes / N).toFixed(0).padStart(6)}`);
      }
    }
  } finally {
    await server.stop();
    receiver.close();
  }
}

console.log(`bench/disk: ${N} scorings per workload; Node ${process.version}`);
for (const db of databases) for (const workload of workloads) await measureOne(db, workload);
