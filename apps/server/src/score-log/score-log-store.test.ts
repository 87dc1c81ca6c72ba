import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { cidOfBytes, scoreAndLog } from '@scenario-scoring/engine';
import { sql } from 'kysely';
import { expect, it, vi } from 'vitest';
import { logRecords, testRecord } from '../../test/support/log-fixtures.js';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { createTestWebhook } from '../../test/support/test-webhooks.js';
import { newEvent, OutboxSignal } from '../events/event-outbox.js';
import { readTenantUsage, rowBytes } from '../quota/tenant-usage.js';
import { packRecord, RECORD_CODEC_1, recordLeafHash, unpackRecord } from '../storage/record-codec.js';
import { SQLITE_FILE_NAME } from '../storage/sqlite-database.js';
import { openStorage, type Storage } from '../storage/storage.js';
import { SecretBox } from '../webhooks/outbound/secret-box.js';
import {
  createScoreLogStore,
  insertLogRecords,
  logRowInserts,
  type StoredLogRecord,
} from './score-log-store.js';

let sequence = 0;
function record(tenantId: string, text = `{"n":${sequence}}`): StoredLogRecord {
  sequence += 1;
  const bytes = new TextEncoder().encode(text);
  return {
    tenantId,
    cid: cidOfBytes(bytes),
    bytes,
    requestId: `req_${sequence}`,
    createdAt: new Date(),
  };
}

forEachDatabase('the score log', ({ storage, database }) => {
  it('wakes the delivery workers after a commit that wrote events, not after one whose events no webhook takes', async () => {
    let notified = 0;
    const outbox = new OutboxSignal();
    outbox.subscribe(() => {
      notified += 1;
    });
    const logs = createScoreLogStore(storage(), { outbox });
    const escalated = (tenantId: string) => ({
      ...record(tenantId),
      events: [newEvent(tenantId, 'policy.escalated', { log_cid: 'bafkreinotify' } as never, new Date())],
    });
    const events = async (tenantId: string) =>
      (await storage().db.selectFrom('events').select('id').where('tenant_id', '=', tenantId).execute())
        .length;
    await logs.append(escalated('notify-unheard'));
    expect(await events('notify-unheard')).toBe(0);
    expect(notified).toBe(0);
    await createTestWebhook(storage(), new SecretBox(randomBytes(32)), {
      tenantId: 'notify-heard',
      url: 'https://example.com/hook',
      events: ['policy.escalated'],
    });
    await logs.append(escalated('notify-heard'));
    expect(await events('notify-heard')).toBe(1);
    expect(notified).toBe(1);
    await logs.append(record('notify-heard'));
    expect(notified).toBe(1);
    await logs.close();
  });

  it('returns exactly the bytes appended', async () => {
    const bytes = new Uint8Array([0x7b, 0x7d, 0x00, 0xff, 0xc3, 0xa9]); // any bytes, not only UTF-8 text
    const appended = { ...record('tenant_a'), bytes, cid: cidOfBytes(bytes) };
    await testFeatures(storage()).logs.append(appended);
    const read = await testFeatures(storage()).logs.get('tenant_a', appended.cid);
    expect(Buffer.isBuffer(read)).toBe(true);
    expect(new Uint8Array(read ?? [])).toEqual(bytes);
  });

  it('does not let a tenant read another tenant’s record', async () => {
    const appended = record('tenant_a');
    await testFeatures(storage()).logs.append(appended);
    expect(await testFeatures(storage()).logs.get('tenant_b', appended.cid)).toBeUndefined();
  });

  it('answers undefined for a CID never appended', async () => {
    expect(await testFeatures(storage()).logs.get('tenant_a', 'bafk_unknown')).toBeUndefined();
  });

  it('accepts the same record twice and keeps the first', async () => {
    const appended = record('tenant_a');
    await testFeatures(storage()).logs.append(appended);
    await testFeatures(storage()).logs.append({ ...appended, requestId: 'req_retry' });
    await Promise.all([
      testFeatures(storage()).logs.append(appended),
      testFeatures(storage()).logs.append(appended),
    ]);
    const rows = await storage()
      .db.selectFrom('log_records')
      .select(['request_id'])
      .where('cid', '=', appended.cid)
      .execute();
    expect(rows).toEqual([{ request_id: appended.requestId }]);
  });

  it('commits 500 concurrent appends in far fewer transactions, all visible to another connection', async () => {
    const before = testFeatures(storage()).logs.stats;
    const records = Array.from({ length: 500 }, () => record('tenant_bulk'));
    await Promise.all(records.map((appended) => testFeatures(storage()).logs.append(appended)));
    const after = testFeatures(storage()).logs.stats;
    expect(after.committedItems - before.committedItems).toBe(500);
    expect(after.flushes - before.flushes).toBeLessThanOrEqual(2); // 500 fit in one batch of 512

    const other = await openStorage(database().options);
    try {
      const count = await other.db
        .selectFrom('log_records')
        .select((eb) => eb.fn.countAll<number | string>().as('count'))
        .where('tenant_id', '=', 'tenant_bulk')
        .executeTakeFirstOrThrow();
      expect(Number(count.count)).toBe(500);
    } finally {
      await other.close();
    }
  });

  it('rejects only the append that cannot be stored; the others of its batch commit', async () => {
    const good = [record('tenant_fail'), record('tenant_fail')];
    // A NULL tenant violates NOT NULL in the database itself, failing the whole transaction.
    const bad = { ...record('tenant_fail'), tenantId: null as unknown as string };
    const outcomes = await Promise.allSettled(
      [...good, bad].map((r) => testFeatures(storage()).logs.append(r)),
    );
    // One bad row never fails another request's record (the isolation principle of issue #10).
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
    for (const r of good) expect(await testFeatures(storage()).logs.get('tenant_fail', r.cid)).toBeDefined();
    // The next batch is not affected.
    const later = record('tenant_fail');
    await testFeatures(storage()).logs.append(later);
    expect(await testFeatures(storage()).logs.get('tenant_fail', later.cid)).toBeDefined();
  });
});

/** What the tenant's log records count in its usage, as stored: each row's bytes and overhead (rowBytes). */
async function storedRecordBytes(storage: Storage, tenantId: string): Promise<number> {
  const stored = await storage.db
    .selectFrom('log_records')
    .select('bytes')
    .where('tenant_id', '=', tenantId)
    .execute();
  return stored.reduce((sum, row) => sum + rowBytes(row.bytes), 0);
}

/** `storage` whose transactions are counted: `steps` holds each one's number of statements. */
function countingTransactions(storage: Storage): {
  steps: number[];
  counted: Pick<Storage, 'db' | 'transact'>;
} {
  const steps: number[] = [];
  return {
    steps,
    counted: {
      db: storage.db,
      transact: (written, options) => {
        steps.push(written.length);
        return storage.transact(written, options);
      },
    },
  };
}

forEachDatabase("the score log's storage usage", ({ storage }) => {
  it("counts a batch's records in their tenants' usage, in one statement on PostgreSQL (one round trip) and one transaction on SQLite", async () => {
    const { steps, counted } = countingTransactions(storage());
    const records = [record('usage_a'), record('usage_b', '{"a longer record":true}'), record('usage_a')];
    await insertLogRecords(counted, records);
    expect(steps).toEqual([storage().kind === 'postgres' ? 1 : 2]);
    // As stored: packed (storage/record-codec.ts).
    const [a1, b, a2] = records.map((r) => rowBytes(packRecord(r.bytes)));
    expect(await readTenantUsage(storage().db, 'usage_a')).toBe((a1 ?? 0) + (a2 ?? 0));
    expect(await readTenantUsage(storage().db, 'usage_b')).toBe(b);
    const rows = await storage()
      .db.selectFrom('log_records')
      .select('cid')
      .where('tenant_id', 'in', ['usage_a', 'usage_b'])
      .execute();
    expect(rows.map((row) => row.cid).sort()).toEqual(records.map((r) => r.cid).sort());

    // A second batch adds to the counts: the upsert of the one statement grows existing rows too.
    const more = record('usage_b');
    await insertLogRecords(counted, [more]);
    expect(await readTenantUsage(storage().db, 'usage_b')).toBe((b ?? 0) + rowBytes(packRecord(more.bytes)));

    // Only the rows an INSERT stored are counted (SQLite reads them back by rowid, PostgreSQL from the
    // INSERT's RETURNING): a record already stored, or twice in one batch, counts once; tenants interleaved.
    const fresh = record('usage_b');
    await insertLogRecords(counted, [records[1] as StoredLogRecord, fresh, fresh]);
    expect(await readTenantUsage(storage().db, 'usage_b')).toBe(
      (b ?? 0) + rowBytes(packRecord(more.bytes)) + rowBytes(packRecord(fresh.bytes)),
    );

    // A batch past one INSERT's rows (ROWS_PER_STATEMENT), two tenants, a quarter of it stored already.
    const old = Array.from({ length: 300 }, (_, n) => record(n % 2 ? 'usage_c' : 'usage_d'));
    await insertLogRecords(counted, old);
    const batch = [
      ...old.slice(0, 75),
      ...Array.from({ length: 1500 }, (_, n) => record(n % 3 ? 'usage_c' : 'usage_d')),
    ];
    await insertLogRecords(counted, batch);
    for (const tenant of ['usage_c', 'usage_d']) {
      expect(await readTenantUsage(storage().db, tenant)).toBe(await storedRecordBytes(storage(), tenant));
    }
  });
});

forEachDatabase("the score log's events", ({ storage }) => {
  it('writes the events a webhook takes with their records, in one statement on PostgreSQL, and counts both in the usage', async () => {
    const { steps, counted } = countingTransactions(storage());
    await createTestWebhook(storage(), new SecretBox(randomBytes(32)), {
      tenantId: 'events_heard',
      url: 'https://example.com/hook',
      events: ['policy.escalated'],
    });
    const escalated = (tenantId: string, subject: string) => ({
      ...record(tenantId),
      subject,
      events: [newEvent(tenantId, 'policy.escalated', { subject } as never, new Date())],
    });
    // Two tenants in one group commit: one with a webhook taking the events, one without.
    const batch = [
      escalated('events_heard', 'héard-1'),
      record('events_heard'),
      escalated('events_unheard', 'unheard'),
      escalated('events_heard', 'heard-2'),
    ];
    expect(await insertLogRecords(counted, batch, testFeatures(storage()).subjectKey)).toBe(2);
    expect(steps).toEqual([storage().kind === 'postgres' ? 1 : 4]);
    const events = await storage()
      .db.selectFrom('events')
      .select(['tenant_id', 'payload', 'subject_key'])
      .where('tenant_id', 'in', ['events_heard', 'events_unheard'])
      .execute();
    expect(events.map((event) => event.tenant_id)).toEqual(['events_heard', 'events_heard']);
    expect(events.every((event) => event.subject_key !== null)).toBe(true);
    for (const tenant of ['events_heard', 'events_unheard']) {
      // As writtenEventsUsage counts an event: its payload's UTF-8 bytes (a subject with an accent, so not
      // its characters) and the row overhead.
      const eventBytes = events
        .filter((event) => event.tenant_id === tenant)
        .reduce((sum, event) => sum + Buffer.byteLength(event.payload) + 64, 0);
      expect(await readTenantUsage(storage().db, tenant)).toBe(
        (await storedRecordBytes(storage(), tenant)) + eventBytes,
      );
    }
    // A group commit without events writes none and says so.
    expect(await insertLogRecords(counted, [record('events_heard')])).toBe(0);
    // More records than one INSERT takes (ROWS_PER_STATEMENT): one transaction of two statements on
    // PostgreSQL, its first writing the events, and the events written still counted.
    steps.length = 0;
    const large = [
      ...Array.from({ length: 1100 }, () => record('events_large')),
      escalated('events_heard', 'heard-3'),
    ];
    expect(await insertLogRecords(counted, large, testFeatures(storage()).subjectKey)).toBe(1);
    expect(steps).toEqual([storage().kind === 'postgres' ? 2 : 6]);
  });
});

forEachDatabase('the score log with a small batch cap', ({ storage, kind, database }) => {
  it('refuses a record whose commit took the write lock past the commit age bound (503, nothing stored): the bound holds while its commit waits', async () => {
    const logs = createScoreLogStore(storage(), { maxCommitAgeMs: 1_000 });
    const tenant = 'tenant_held';
    // The tenant's usage row exists (the lock PostgreSQL's insert waits for).
    await logs.append(record(tenant));
    const late = record(tenant);
    // Another writer holds what the commit needs for 2 s: SQLite's write lock (another process's
    // connection), PostgreSQL's row of the tenant's usage.
    let released: Promise<unknown>;
    if (kind === 'sqlite') {
      const holder = new DatabaseSync(join(database().options.dataDir, SQLITE_FILE_NAME));
      holder.exec('begin immediate');
      released = new Promise((resolve) =>
        setTimeout(() => {
          holder.exec('rollback');
          holder.close();
          resolve(undefined);
        }, 2_000),
      );
    } else {
      released = storage()
        .db.transaction()
        .execute(async (trx) => {
          await sql`select 1 from tenant_usage where tenant_id = ${tenant} for update`.execute(trx);
          await new Promise((resolve) => setTimeout(resolve, 2_000));
        });
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const outcome = await Promise.allSettled([logs.append(late)]);
    await released;
    expect(outcome[0]?.status).toBe('rejected');
    expect((outcome[0] as PromiseRejectedResult).reason).toMatchObject({
      code: 'storage_unavailable',
      detail: expect.stringMatching(/within 1 s of its start, so it was not stored/),
    });
    expect(await logs.get(tenant, late.cid)).toBeUndefined();
    // Once the writer is gone, the next commits.
    const next = record(tenant);
    await logs.append(next);
    expect(await logs.get(tenant, next.cid)).toBeDefined();
    await logs.close();
  }, 20_000);

  it.runIf(kind === 'postgres')(
    "measures the commit bound on the database's clock: this host's clock 20 s behind or ahead of it changes nothing",
    async () => {
      const logs = createScoreLogStore(storage(), { maxCommitAgeMs: 1_000 });
      const real = Date.now;
      for (const shift of [-20_000, 20_000]) {
        const skewed = vi.spyOn(Date, 'now').mockImplementation(() => real() + shift);
        try {
          const skew = record('tenant_skew');
          await logs.append(skew);
          expect(await logs.get('tenant_skew', skew.cid)).toBeDefined();
        } finally {
          skewed.mockRestore();
        }
      }
      await logs.close();
    },
  );

  it('refuses a record appended longer ago than the commit age bound (503, nothing stored) while its batch commits', async () => {
    let clock = 0;
    const logs = createScoreLogStore(storage(), { maxCommitAgeMs: 15_000, now: () => clock });
    const stale = record('tenant_stale');
    const fresh = record('tenant_stale');
    // The first waits 20 s between its append and its commit (a stalled queue); the second is appended then.
    const staleAppend = logs.append(stale);
    clock = 20_000;
    const [staleResult, freshResult] = await Promise.allSettled([staleAppend, logs.append(fresh)]);
    expect(freshResult.status).toBe('fulfilled');
    expect(staleResult.status).toBe('rejected');
    expect((staleResult as PromiseRejectedResult).reason).toMatchObject({
      code: 'storage_unavailable',
      detail: expect.stringMatching(/within 15 s of its start, so it was not stored/),
    });
    expect(await logs.get('tenant_stale', stale.cid)).toBeUndefined();
    expect(await logs.get('tenant_stale', fresh.cid)).toBeDefined();
    await logs.close();
  });

  it('splits a burst into batches of at most maxBatch records', async () => {
    const logs = createScoreLogStore(storage(), { maxBatch: 100 });
    await Promise.all(Array.from({ length: 250 }, () => logs.append(record('tenant_cap'))));
    await logs.close();
    expect(logs.stats).toMatchObject({
      flushes: 3,
      committedItems: 250,
      largestBatch: 100,
    });
  });
});

forEachDatabase('the score log, stored packed', ({ storage }) => {
  const scoring = (subject: string) =>
    scoreAndLog(
      subject,
      {
        jurisdiction: 'DE',
        utilization: 0.4,
        on_time_ratio: 0.93,
        history_months: 40,
        inquiries_12m: 2,
        debt_to_income: 0.3,
      },
      {
        identity: { kind: 'score', request_id: 'req_01JPACKEDPACKEDPACKEDPACK' },
        scored_at: new Date().toISOString(),
        salt: randomBytes(32).toString('base64url'),
      },
    );
  const storedBytes = async (tenantId: string, cid: string) =>
    Buffer.from(
      (
        await storage()
          .db.selectFrom('log_records')
          .select('bytes')
          .where('tenant_id', '=', tenantId)
          .where('cid', '=', cid)
          .executeTakeFirstOrThrow()
      ).bytes,
    );
  const queued = async (tenantId: string) =>
    (
      await storage()
        .db.selectFrom('log_leaf_queue')
        .select(['cid', 'leaf_hash'])
        .where('tenant_id', '=', tenantId)
        .orderBy('cid')
        .execute()
    ).map((row) => [row.cid, Buffer.from(row.leaf_hash).toString('hex')]);

  it('stores a score-log/2 record in a fraction of its bytes and serves exactly its bytes', async () => {
    const logged = scoring('packed-subject');
    const raw = Buffer.from(logged.logBytes);
    await testFeatures(storage()).logs.append({
      tenantId: 'tenant_packed',
      cid: logged.logCid,
      bytes: logged.logBytes,
      requestId: 'req_packed',
      createdAt: new Date(),
    });
    const stored = await storedBytes('tenant_packed', logged.logCid);
    expect(stored[0]).toBe(RECORD_CODEC_1);
    expect(stored.length).toBeLessThan(raw.length / 4);
    expect(stored.includes('packed-subject')).toBe(false);
    expect(unpackRecord(stored).equals(raw)).toBe(true);
    expect((await testFeatures(storage()).logs.get('tenant_packed', logged.logCid))?.equals(raw)).toBe(true);
  });

  it('queues each record inserted once, with the leaf hash of its own bytes, from scorings and run batches alike', async () => {
    const records = Array.from({ length: 6 }, (_, n) => testRecord('tenant_queue', n));
    await logRecords(storage(), records);
    // A run batch repeating a record already stored, and one record twice in one statement: none queued again.
    const again = testRecord('tenant_queue', 6);
    const row = (r: typeof again) => ({
      tenant_id: r.tenantId,
      cid: r.cid,
      bytes: r.bytes,
      request_id: 'run_again',
      created_at: new Date().toISOString(),
    });
    await storage().transact(
      logRowInserts(storage().db, [row(records[1] as typeof again), row(again), row(again)]),
    );
    const all = [...records, again];
    expect(await queued('tenant_queue')).toEqual(
      all
        .map((r) => [r.cid, recordLeafHash(r.bytes).toString('hex')])
        .sort((a, b) => ((a[0] as string) < (b[0] as string) ? -1 : 1)),
    );
    for (const r of all) expect((await storedBytes('tenant_queue', r.cid))[0]).toBe(RECORD_CODEC_1);
  });

  it('reads a record stored plain (as before codec 1) as it is, queued once by the trigger', async () => {
    const plain = testRecord('tenant_plain', 1);
    await storage()
      .db.insertInto('log_records')
      .values({
        tenant_id: plain.tenantId,
        cid: plain.cid,
        bytes: plain.bytes,
        request_id: 'req_plain',
        created_at: new Date().toISOString(),
      })
      .execute();
    expect(await queued('tenant_plain')).toEqual([[plain.cid, recordLeafHash(plain.bytes).toString('hex')]]);
    const read = await testFeatures(storage()).logs.get('tenant_plain', plain.cid);
    expect(read?.equals(Buffer.from(plain.bytes))).toBe(true);
  });

  it('refuses to serve a row whose stored bytes do not give its CID', async () => {
    const [a, b] = [testRecord('tenant_damaged', 1), testRecord('tenant_damaged', 2)];
    await storage()
      .db.insertInto('log_records')
      .values({
        tenant_id: a.tenantId,
        cid: a.cid,
        bytes: packRecord(b.bytes),
        request_id: 'req_damaged',
        created_at: new Date().toISOString(),
      })
      .execute();
    await expect(testFeatures(storage()).logs.get('tenant_damaged', a.cid)).rejects.toThrow(
      /internal_error: The stored bytes of log record \S+ do not hash to its CID/,
    );
  });
});
