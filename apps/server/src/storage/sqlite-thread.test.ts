import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { CompiledQuery, Kysely, sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteThreadDialect, type SqliteThreadOptions } from './sqlite-thread.js';

interface Tables {
  t: { n: number; label: string | null };
}

const open: Kysely<Tables>[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((db) => db.destroy()));
});

function openDb(file = join(mkdtempSync(join(tmpdir(), 'sqlite-thread-')), 'db.sqlite')): Kysely<Tables> {
  return openDialect(file).db;
}

/** A database on a fresh file (or `file`), with its dialect, whose `executeTransaction` bypasses Kysely. */
function openDialect(
  file = join(mkdtempSync(join(tmpdir(), 'sqlite-thread-')), 'db.sqlite'),
  waits: Pick<SqliteThreadOptions, 'busyTimeoutMs' | 'contendedBusyTimeoutMs'> = {},
) {
  const dialect = new SqliteThreadDialect({
    file,
    pragmas: ['PRAGMA journal_mode = WAL', 'PRAGMA synchronous = FULL'],
    statementCacheSize: 2,
    ...waits,
  });
  const db = new Kysely<Tables>({ dialect });
  open.push(db);
  return { file, dialect, db };
}

describe('the SQLite connection in its own thread', () => {
  it('runs statements and transactions: rows, changes, commit and rollback', async () => {
    const db = openDb();
    await sql`create table t (n integer primary key, label text)`.execute(db);
    const inserted = await db
      .insertInto('t')
      .values([
        { n: 1, label: 'one' },
        { n: 2, label: null },
      ])
      .executeTakeFirst();
    expect(inserted.numInsertedOrUpdatedRows).toBe(2n);
    await db.transaction().execute(async (trx) => {
      await trx.insertInto('t').values({ n: 3, label: 'three' }).execute();
    });
    await expect(
      db.transaction().execute(async (trx) => {
        await trx.insertInto('t').values({ n: 4, label: 'four' }).execute();
        throw new Error('undo');
      }),
    ).rejects.toThrow('undo');
    // More SQL texts than the statement cache holds, then the first ones again.
    for (let round = 0; round < 2; round++) {
      expect(await db.selectFrom('t').select('n').orderBy('n').execute()).toEqual([
        { n: 1 },
        { n: 2 },
        { n: 3 },
      ]);
      expect(await db.selectFrom('t').select('label').where('n', '=', 2).executeTakeFirst()).toEqual({
        label: null,
      });
      expect(await db.selectFrom('t').select('n').where('label', '=', 'three').execute()).toEqual([{ n: 3 }]);
    }
    const returned = await db.insertInto('t').values({ n: 5, label: 'five' }).returning(['n']).execute();
    expect(returned).toEqual([{ n: 5 }]);
  });

  it('begins a transaction with its first statement, and ends one that never began or failed to begin', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'sqlite-thread-')), 'db.sqlite');
    const db = openDb(file);
    await sql`create table t (n integer primary key, label text)`.execute(db);
    // Nothing ran in it: nothing to commit or roll back.
    await db.transaction().execute(async () => {});
    await expect(
      db.transaction().execute(async () => {
        throw new Error('before any statement');
      }),
    ).rejects.toThrow('before any statement');
    // Its first statement fails: rolled back, and the next transaction is a fresh one.
    await db.insertInto('t').values({ n: 1, label: 'one' }).execute();
    await expect(
      db.transaction().execute(async (trx) => {
        await trx.insertInto('t').values({ n: 1, label: 'again' }).execute();
      }),
    ).rejects.toThrow(/UNIQUE constraint failed/);
    // Another connection holds the write lock (and this one has no busy timeout): the begin fails, and that
    // failure, not a failed rollback, is what the transaction reports.
    const other = new DatabaseSync(file);
    other.exec('begin immediate');
    await expect(
      db.transaction().execute(async (trx) => {
        await trx.insertInto('t').values({ n: 2, label: 'two' }).execute();
      }),
    ).rejects.toThrow(/database is locked/);
    other.exec('rollback');
    other.close();
    await db.transaction().execute(async (trx) => {
      await trx.insertInto('t').values({ n: 2, label: 'two' }).execute();
      await trx.insertInto('t').values({ n: 3, label: 'three' }).execute();
    });
    expect(await db.selectFrom('t').select('n').orderBy('n').execute()).toEqual([
      { n: 1 },
      { n: 2 },
      { n: 3 },
    ]);
  });

  it('runs a transaction known up front as one message: all of it, or none when a statement or the begin fails', async () => {
    const { file, dialect, db } = openDialect();
    await sql`create table t (n integer primary key, label text)`.execute(db);
    const insert = (n: number) =>
      db
        .insertInto('t')
        .values({ n, label: `#${n}` })
        .compile();
    const results = await dialect.executeTransaction([
      insert(1),
      insert(2),
      db.selectFrom('t').select('n').orderBy('n').compile(),
    ]);
    expect(results.map((result) => result?.numAffectedRows)).toEqual([1n, 1n, undefined]);
    expect(results[2]?.rows).toEqual([{ n: 1 }, { n: 2 }]);
    // The second statement fails: the first is rolled back with it, and the error is SQLite's own.
    await expect(dialect.executeTransaction([insert(3), insert(1)])).rejects.toMatchObject({
      message: expect.stringMatching(/UNIQUE constraint failed/),
      code: 'ERR_SQLITE_ERROR',
      statement: 1,
    });
    // Another connection holds the write lock: the begin fails, nothing is left open.
    const other = new DatabaseSync(file);
    other.exec('begin immediate');
    await expect(dialect.executeTransaction([insert(4)])).rejects.toThrow(/database is locked/);
    other.exec('rollback');
    other.close();
    await dialect.executeTransaction([insert(5)]);
    // A value the thread cannot be given: refused at once, and the connection goes on working.
    await expect(dialect.executeTransaction([CompiledQuery.raw('select ?', [() => 1])])).rejects.toThrow(
      /could not be cloned/,
    );
    expect(await db.selectFrom('t').select('n').orderBy('n').execute()).toEqual([
      { n: 1 },
      { n: 2 },
      { n: 5 },
    ]);
  });

  it('sends no transaction of its own into a Kysely transaction in progress, nor a Kysely query into its own', async () => {
    const { dialect, db } = openDialect();
    await sql`create table t (n integer primary key, label text)`.execute(db);
    const insert = (n: number) => db.insertInto('t').values({ n, label: null }).compile();
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const kysely = db.transaction().execute(async (trx) => {
      await trx.insertInto('t').values({ n: 1, label: null }).execute();
      await gate; // the transaction is open in the thread
      await trx.insertInto('t').values({ n: 2, label: null }).execute();
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    let done = 0;
    const ours = [10, 11, 12].map((n) => dialect.executeTransaction([insert(n)]).then(() => done++));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(done).toBe(0);
    release();
    await Promise.all([kysely, ...ours]);
    expect(done).toBe(3);
    // And a Kysely query asked for while ours are in flight waits for them.
    const more = [20, 21].map((n) => dialect.executeTransaction([insert(n)]));
    const count = db
      .selectFrom('t')
      .select((eb) => eb.fn.countAll<number>().as('rows'))
      .executeTakeFirstOrThrow();
    await Promise.all(more);
    expect((await count).rows).toBe(7);
  });

  it('lets the connection go once a transaction known up front is posted: what is asked for next runs after it, even when it fails', async () => {
    const { dialect, db } = openDialect();
    await sql`create table t (n integer primary key, label text)`.execute(db);
    const insert = (n: number) => db.insertInto('t').values({ n, label: null }).compile();
    const failing = dialect.executeTransaction([insert(1), sql`insert into nope values (1)`.compile(db)]);
    const lease = dialect.executeTransaction([insert(2)], { durability: 'lease' });
    const next = db
      .transaction()
      .execute((trx) => trx.insertInto('t').values({ n: 3, label: null }).execute());
    const synchronous = sql<{ synchronous: number }>`pragma synchronous`.execute(db);
    await expect(failing).rejects.toThrow(/nope/);
    await Promise.all([lease, next]);
    expect((await synchronous).rows).toEqual([{ synchronous: 2 }]);
    expect(await db.selectFrom('t').select('n').orderBy('n').execute()).toEqual([{ n: 2 }, { n: 3 }]);
  });

  it('keeps bytes as bytes, views on a larger buffer (pooled Buffers) included', async () => {
    const db = openDb();
    await sql`create table b (n integer, data blob)`.execute(db);
    const whole = Uint8Array.from([0, 1, 2, 255]);
    const pooled = Buffer.from('pooled'); // a view on Node's shared pool
    expect(pooled.byteLength).toBeLessThan(pooled.buffer.byteLength);
    await sql`insert into b (n, data) values (1, ${whole}), (2, ${pooled}), (3, ${whole.subarray(1, 3)})`.execute(
      db,
    );
    const { rows } = await sql<{ data: Uint8Array }>`select data from b order by n`.execute(db);
    for (const row of rows) expect(row.data).toBeInstanceOf(Uint8Array);
    expect(rows.map((row) => Buffer.from(row.data).toString('hex'))).toEqual([
      '000102ff',
      Buffer.from('pooled').toString('hex'),
      '0102',
    ]);
  });

  it("fails a statement with SQLite's own error, and goes on working", async () => {
    const db = openDb();
    await sql`create table t (n integer primary key, label text)`.execute(db);
    await db.insertInto('t').values({ n: 1, label: 'one' }).execute();
    const failure = await db
      .insertInto('t')
      .values({ n: 1, label: 'again' })
      .execute()
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toMatch(/UNIQUE constraint failed: t\.n/);
    expect(failure).toMatchObject({ code: 'ERR_SQLITE_ERROR', errcode: 1555 });
    await expect(sql`select nope from t`.execute(db)).rejects.toThrow(/no such column: nope/);
    expect(await db.selectFrom('t').select('label').execute()).toEqual([{ label: 'one' }]);
  });

  it('waits the whole busy timeout once while another connection keeps the write lock, then briefly, until it takes the lock again', async () => {
    const { file, db } = openDialect(undefined, { busyTimeoutMs: 1500, contendedBusyTimeoutMs: 50 });
    await sql`create table t (n integer primary key, label text)`.execute(db);
    const busyTimeout = async () =>
      (await sql<{ timeout: number }>`pragma busy_timeout`.execute(db)).rows[0]?.timeout;
    expect(await busyTimeout()).toBe(1500);
    // Another process (an operator's shell, a tool) takes the write lock and keeps it.
    const holder = new DatabaseSync(file);
    holder.exec('begin immediate');
    try {
      const started = performance.now();
      // Three writers queued on the one connection (two transactions, one statement on its own), and a read.
      const writes = await Promise.allSettled([
        db.transaction().execute((trx) => trx.insertInto('t').values({ n: 1, label: 'a' }).execute()),
        db.insertInto('t').values({ n: 2, label: 'b' }).execute(),
        db.transaction().execute((trx) => trx.insertInto('t').values({ n: 3, label: 'c' }).execute()),
      ]);
      const read = await db.selectFrom('t').selectAll().execute();
      const elapsed = performance.now() - started;
      for (const write of writes) {
        expect(write.status).toBe('rejected');
        expect((write as PromiseRejectedResult).reason).toMatchObject({ errcode: 5 });
      }
      expect(read).toEqual([]);
      // The first waited 1.5 s; the others 50 ms each, not 1.5 s in turn (4.5 s in all).
      expect(elapsed).toBeGreaterThanOrEqual(1400);
      expect(elapsed).toBeLessThan(2900);
      expect(await busyTimeout()).toBe(50);
    } finally {
      holder.exec('rollback');
      holder.close();
    }
    // The lock is free again: the next write transaction takes it, and the whole wait is back.
    await db.transaction().execute((trx) => trx.insertInto('t').values({ n: 4, label: 'd' }).execute());
    expect(await busyTimeout()).toBe(1500);
    expect(await db.selectFrom('t').select('n').execute()).toEqual([{ n: 4 }]);
  });

  it('leaves the event loop free while a statement runs', async () => {
    const db = openDb();
    let ticks = 0;
    const timer = setInterval(() => {
      ticks += 1;
    }, 5);
    const started = performance.now();
    // A statement that keeps SQLite busy for a while: a recursive count to 2 million.
    await sql`with recursive c(x) as (select 1 union all select x + 1 from c where x < 2000000) select count(*) from c`.execute(
      db,
    );
    const elapsed = performance.now() - started;
    clearInterval(timer);
    expect(elapsed).toBeGreaterThan(100);
    // Had the statement run on this thread, no timer could have fired until it ended.
    expect(ticks).toBeGreaterThan(5);
  });

  it('fails to open with a clear error, not a hang', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sqlite-thread-'));
    writeFileSync(join(dir, 'not-a-dir'), '');
    const db = openDb(join(dir, 'not-a-dir', 'db.sqlite'));
    await expect(sql`select 1`.execute(db)).rejects.toThrow(/unable to open database/);
    open.pop();
  });
});
