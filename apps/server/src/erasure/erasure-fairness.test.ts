import { randomBytes } from 'node:crypto';
import type { Erasure, Problem, Run } from '@scenario-scoring/api-types';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { queryPlan } from '../../test/support/query-plan.js';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testErasureWorker } from '../../test/support/test-erasure-worker.js';
import { testFeatures } from '../../test/support/test-features.js';
import { testRunWorker, waitForRunEnd } from '../../test/support/test-run-worker.js';
import { startTestServer, type TestServer, testConfig } from '../../test/support/test-server.js';
import type { Clock } from '../common/clock.js';
import { newId } from '../common/ids.js';
import { insertRun } from '../runs/run-store.js';
import type { Database } from '../storage/database.js';
import { type CompactedTable, compact, erasedTables } from './erasure-processor.js';
import { claimErasure, failedRunsWithRest, runsOfErasedItems } from './erasure-store.js';

const PLAIN = { jurisdiction: 'GB', on_time_ratio: 0.97, utilization: 0.2, history_months: 120 };
/** The per-tenant bound of pending erasures these tests run with. */
const MAX_PENDING = 6;

forEachDatabase('erasures shared among tenants', ({ storage, kind }) => {
  let server: TestServer;
  const keys = new Map<string, string>();
  const key = async (tenant: string) => {
    let found = keys.get(tenant);
    if (found === undefined) {
      ({ key: found } = await testFeatures(storage()).keys.create(tenant));
      keys.set(tenant, found);
    }
    return found;
  };
  const erase = (tenant: string, subject: string, headers: Record<string, string> = {}) =>
    key(tenant).then((bearer) => server.request('/v1/erasures', { key: bearer, body: { subject }, headers }));
  const accept = async (tenant: string, subject: string) => {
    const response = await erase(tenant, subject);
    expect(response.status).toBe(202);
    return ((await response.json()) as Erasure).id;
  };
  /** The tenant's erasures completed, in the order their `subject.erased` events were written. */
  const completionOrder = async (ids: readonly string[]) => {
    const rows = await storage()
      .db.selectFrom('events')
      .select(['id', 'payload'])
      .where('type', '=', 'subject.erased')
      .orderBy('id')
      .execute();
    return rows
      .map((row) => (JSON.parse(row.payload) as { data: { erasure_id: string } }).data.erasure_id)
      .filter((id) => ids.includes(id));
  };
  /** Completes every pending erasure of these tests (a round each, a few rounds). */
  const drain = async () => {
    const worker = testErasureWorker(storage());
    for (let round = 0; round < 5; round++) if ((await worker.runOnce()) === 0) break;
  };

  beforeAll(async () => {
    server = await startTestServer({
      storage: storage(),
      config: { erasure: { ...testConfig().erasure, maxPendingPerTenant: MAX_PENDING } },
    });
  });
  afterAll(() => server.close());

  it("takes tenants in turn: another tenant's erasure completes after at most one of a tenant with many queued before it", async () => {
    // Both orders of tenant ids: the flooding tenant sorting before the other, and after it.
    for (const [flooder, victim] of [
      [`a-flood-${kind}`, `b-victim-${kind}`],
      [`d-flood-${kind}`, `c-victim-${kind}`],
    ] as const) {
      const flood: string[] = [];
      for (let n = 0; n < MAX_PENDING; n++) flood.push(await accept(flooder, `nobody-${n}-${newId('x')}`));
      const victims = [await accept(victim, `someone-${newId('x')}`)];
      await drain();
      const order = await completionOrder([...flood, ...victims]);
      expect(order).toHaveLength(flood.length + 1);
      // Oldest first across tenants, it was last: behind every erasure of the flooding tenant.
      expect(order.indexOf(victims[0] as string)).toBeLessThanOrEqual(1);
    }
  });

  it('claims no erasure still settling, and goes on with the next tenant after the one it last served', async () => {
    const db = storage().db;
    const settling = await accept(`e-settling-${kind}`, `settling-${newId('x')}`);
    const now = new Date();
    expect(
      await claimErasure(db, 'wrk_test', now, 60_000, { settledBy: new Date(now.getTime() - 60_000) }),
    ).toBeUndefined();
    const row = await db
      .selectFrom('erasures')
      .select('locked_by')
      .where('id', '=', settling)
      .executeTakeFirstOrThrow();
    expect(row.locked_by).toBeNull();
    const [f, g] = [`f-turn-${kind}`, `g-turn-${kind}`];
    await accept(f, `f-${newId('x')}`);
    const newer = await accept(g, `g-${newId('x')}`);
    // After f comes g, though f's erasure is older (oldest first, f's came first).
    const claimed = await claimErasure(db, 'wrk_test', new Date(), 60_000, {
      after: f,
      passOver: [settling],
    });
    expect(claimed?.id).toBe(newer);
    await db
      .updateTable('erasures')
      .set({ locked_by: null, locked_until: null })
      .where('locked_by', '=', 'wrk_test')
      .execute();
    await drain();
  });

  it(`refuses a tenant's erasure past ${MAX_PENDING} pending with 429 rate_limited and Retry-After; others, and replays, go on`, async () => {
    const tenant = `h-bounded-${kind}`;
    const retried = `retried-${newId('x')}`;
    const first = await erase(tenant, retried, { 'Idempotency-Key': `k-${retried}` });
    expect(first.status).toBe(202);
    for (let n = 1; n < MAX_PENDING; n++) await accept(tenant, `bounded-${n}-${newId('x')}`);
    const refused = await erase(tenant, `one-too-many-${newId('x')}`);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('30');
    const problem = (await refused.json()) as Problem;
    expect(problem.code).toBe('rate_limited');
    expect(problem.detail).toContain(`${MAX_PENDING} erasures pending`);
    // A retry of an accepted one is its replay; another tenant is not bounded by this one's.
    const replay = await erase(tenant, retried, { 'Idempotency-Key': `k-${retried}` });
    expect(replay.status).toBe(202);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    await accept(`i-other-${kind}`, `other-${newId('x')}`);
    // Once they complete, the tenant may erase again.
    await drain();
    await accept(tenant, `after-${newId('x')}`);
    await drain();
  });

  it('compacts at most once per interval, only the tables the erasures changed, batched across erasures', async () => {
    const calls: CompactedTable[][] = [];
    let offset = 0;
    const clock: Clock = { now: () => new Date(Date.now() + offset) };
    const worker = testErasureWorker(storage(), {
      clock,
      config: { compactIntervalMs: 60_000 },
      compact: async (on, tables) => {
        calls.push([...tables].sort());
        return compact(on, tables);
      },
    });
    const tenant = `j-compact-${kind}`;
    const vacuums = () => vacuumCounts(storage().db, kind);
    const before = await vacuums();
    for (let n = 0; n < MAX_PENDING; n++) await accept(tenant, `nobody-${n}-${newId('x')}`);
    expect(await worker.runOnce()).toBe(MAX_PENDING);
    // The first erasure's at once (nothing compacted yet), the others' once the interval has passed.
    expect(calls).toEqual([['erasures']]);
    expect(await worker.runOnce()).toBe(0);
    expect(calls).toHaveLength(1);
    offset = 60_000;
    expect(await worker.runOnce()).toBe(0);
    expect(calls).toEqual([['erasures'], ['erasures']]);
    expect(await worker.runOnce()).toBe(0);
    expect(calls).toHaveLength(2);
    if (kind === 'postgres') {
      // Two VACUUMs of erasures for six erasures (before: six, and of seven tables each).
      const after = await vacuums();
      expect(after.erasures - before.erasures).toBe(2);
      expect(after.log_records - before.log_records).toBe(0);
      expect(after.runs - before.runs).toBe(0);
    }
  });

  it('vacuums run_inputs with the run items when an erasure erased an NDJSON run item', async () => {
    const tenant = `k-ndjson-${kind}`;
    const who = `ndjson-${randomBytes(4).toString('hex')}`;
    const created = await server.request('/v1/scoring/runs', {
      key: await key(tenant),
      body: `${JSON.stringify({ subject: who, context: PLAIN })}\n${JSON.stringify({ subject: 'else', context: PLAIN })}\n`,
      headers: { 'content-type': 'application/x-ndjson' },
    });
    expect(created.status).toBe(202);
    const run = (await created.json()) as Run;
    const runWorker = testRunWorker(storage());
    runWorker.start();
    try {
      await waitForRunEnd(server, await key(tenant), run.id);
    } finally {
      await runWorker.stop();
    }
    const calls: CompactedTable[][] = [];
    const worker = testErasureWorker(storage(), {
      compact: async (on, tables) => {
        calls.push([...tables].sort());
        return compact(on, tables);
      },
    });
    const before = await vacuumCounts(storage().db, kind);
    const id = await accept(tenant, who);
    expect(await worker.runOnce()).toBe(1);
    const done = (await (
      await server.request(`/v1/erasures/${id}`, { key: await key(tenant) })
    ).json()) as Erasure;
    expect(done.counts).toMatchObject({ log_records: 1, run_items: 1 });
    expect(calls).toEqual([['erasures', 'log_records', 'run_inputs', 'run_items']]);
    if (kind === 'postgres') {
      const after = await vacuumCounts(storage().db, kind);
      for (const table of ['erasures', 'log_records', 'run_inputs', 'run_items'] as const)
        expect({ table, vacuums: after[table] - before[table] }).toEqual({ table, vacuums: 1 });
      expect(after.events - before.events).toBe(0);
    }
  });

  it('names the tables each kind of count changed', () => {
    const none = {
      log_records: 0,
      run_items: 0,
      run_inputs: 0,
      events: 0,
      delivery_attempts: 0,
      idempotency_answers: 0,
    };
    expect(erasedTables(none)).toEqual(['erasures']);
    expect(
      erasedTables({
        ...none,
        log_records: 1,
        run_inputs: 2,
        events: 1,
        delivery_attempts: 1,
        idempotency_answers: 1,
      }).sort(),
    ).toEqual(['delivery_attempts', 'erasures', 'events', 'idempotency_keys', 'log_records', 'runs']);
  });

  it('erases the inputs of the runs of its items, of failed runs never attempted and of runs from before 0010 (unkeyed), reading no other run', async () => {
    const tenant = `l-inputs-${kind}`;
    const db = storage().db;
    const who = `inputs-${randomBytes(4).toString('hex')}`;
    const item = (subject: string) => ({ subject, context: PLAIN });
    const past = new Date(Date.now() - 60_000);
    // A run scored whole (its items have run items, keyed).
    const created = await server.request('/v1/scoring/runs', {
      key: await key(tenant),
      body: { items: [item(who), item('kept-1')] },
    });
    const scored = ((await created.json()) as Run).id;
    const runWorker = testRunWorker(storage());
    runWorker.start();
    try {
      await waitForRunEnd(server, await key(tenant), scored);
    } finally {
      await runWorker.stop();
    }
    // A failed run whose items holding the subject were never attempted (no run item).
    const failed = newId('run');
    // A run from before migration 0010: its item of the subject has a run item without a subject key.
    const unkeyed = newId('run');
    // A failed run that does not hold the subject.
    const other = newId('run');
    await db.transaction().execute(async (trx) => {
      for (const [id, items] of [
        [failed, [item('kept-2'), item(who), item(who)]],
        [unkeyed, [item(who), item('kept-3')]],
        [other, [item('kept-4')]],
      ] as const) {
        await insertRun(trx, { id, tenantId: tenant, items: [...items], now: past, deadlineAt: null });
      }
      await trx
        .updateTable('runs')
        .set({ status: 'failed', next_index: 1 })
        .where('id', 'in', [failed, other])
        .execute();
      await trx
        .updateTable('runs')
        .set({ status: 'completed', next_index: 2 })
        .where('id', '=', unkeyed)
        .execute();
      await trx
        .insertInto('run_items')
        .values([
          {
            run_id: unkeyed,
            item_index: 0,
            subject: who,
            status: 'error',
            log_cid: null,
            escalated: 0,
            error: '{}',
          },
          {
            run_id: unkeyed,
            item_index: 1,
            subject: 'kept-3',
            status: 'error',
            log_cid: null,
            escalated: 0,
            error: '{}',
          },
        ])
        .execute();
    });
    const id = await accept(tenant, who);
    expect(await testErasureWorker(storage(), { config: { batchSize: 1 } }).runOnce()).toBe(1);
    const done = (await (
      await server.request(`/v1/erasures/${id}`, { key: await key(tenant) })
    ).json()) as Erasure;
    // One each in the scored and the unkeyed run, two in the failed one.
    expect(done.counts).toMatchObject({ run_items: 2, run_inputs: 4 });
    const items = async (run: string) =>
      JSON.parse(
        (await db.selectFrom('runs').select('items').where('id', '=', run).executeTakeFirstOrThrow()).items,
      ) as unknown[];
    expect(await items(scored)).toEqual([{ erasure_id: id }, item('kept-1')]);
    expect(await items(failed)).toEqual([item('kept-2'), { erasure_id: id }, { erasure_id: id }]);
    expect(await items(unkeyed)).toEqual([{ erasure_id: id }, item('kept-3')]);
    expect(await items(other)).toEqual([item('kept-4')]);

    // The runs to read are found by index walks: no scan of the runs or the run items.
    for (const [query, index] of [
      [runsOfErasedItems(db, id, '', 20).compile(), 'run_items_erasure_idx'],
      [failedRunsWithRest(db, tenant, '', 20).compile(), 'runs_failed_rest_idx'],
    ] as const) {
      const lines = await queryPlan(db, kind, query);
      expect(
        lines.some((line) => line.includes(index)),
        lines.join('\n'),
      ).toBe(true);
      expect(lines.filter((line) => /^SCAN (runs|run_items)\b|Seq Scan|USE TEMP B-TREE/.test(line))).toEqual(
        [],
      );
    }
  });

  it('waits for a queued run holding the subject however many queued runs come before it', async () => {
    const tenant = `m-queued-${kind}`;
    const who = `queued-${randomBytes(4).toString('hex')}`;
    const past = new Date(Date.now() - 60_000);
    const holding = newId('run');
    await storage()
      .db.transaction()
      .execute(async (trx) => {
        // More than one statement's worth of queued runs before the one holding the subject.
        for (let n = 0; n < 40; n++) {
          await insertRun(trx, {
            id: newId('run'),
            tenantId: tenant,
            items: [{ subject: `queued-other-${n}`, context: PLAIN }],
            now: past,
            deadlineAt: null,
          });
        }
        await insertRun(trx, {
          id: holding,
          tenantId: tenant,
          items: [{ subject: who, context: PLAIN }],
          now: past,
          deadlineAt: null,
        });
      });
    const waiting = await accept(tenant, who);
    const free = await accept(tenant, `not-queued-${randomBytes(4).toString('hex')}`);
    expect(await testErasureWorker(storage()).runOnce()).toBe(1);
    const status = async (id: string) =>
      (
        await storage()
          .db.selectFrom('erasures')
          .select('status')
          .where('id', '=', id)
          .executeTakeFirstOrThrow()
      ).status;
    expect(await status(waiting)).toBe('pending');
    expect(await status(free)).toBe('completed');
    // The runs end (here: failed, their items never attempted); the erasure goes on.
    await storage()
      .db.updateTable('runs')
      .set({ status: 'failed' })
      .where('tenant_id', '=', tenant)
      .execute();
    expect(await testErasureWorker(storage()).runOnce()).toBe(1);
    expect(await status(waiting)).toBe('completed');
  });
});

/** How many times each table was vacuumed by hand (PostgreSQL's statistics); zeros on SQLite. */
async function vacuumCounts(db: Kysely<Database>, kind: string): Promise<Record<CompactedTable, number>> {
  const counts = {
    log_records: 0,
    run_items: 0,
    run_inputs: 0,
    runs: 0,
    events: 0,
    delivery_attempts: 0,
    idempotency_keys: 0,
    erasures: 0,
  };
  if (kind !== 'postgres') return counts;
  return db.connection().execute(async (connection) => {
    await sql`select pg_stat_clear_snapshot()`.execute(connection);
    const { rows } = await sql<{ relname: string; vacuum_count: string }>`
      select relname, vacuum_count from pg_stat_user_tables`.execute(connection);
    for (const row of rows)
      if (row.relname in counts) counts[row.relname as CompactedTable] = Number(row.vacuum_count);
    return counts;
  });
}
