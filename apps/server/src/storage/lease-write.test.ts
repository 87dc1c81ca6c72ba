import { sql } from 'kysely';
import { expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { withLeaseDurability } from './lease-write.js';

forEachDatabase('withLeaseDurability', ({ kind, storage }) => {
  const synchronous = async (db = storage().db) =>
    (await sql<{ synchronous: number }>`pragma synchronous`.execute(db)).rows[0]?.synchronous;

  it('commits the write, and leaves the connection flushing every other commit (synchronous=FULL)', async () => {
    const seen = await withLeaseDurability(storage(), async (db) => {
      await sql`update tenants set id = id where id = 'none'`.execute(db);
      return kind === 'sqlite' ? synchronous(db) : 'as is';
    });
    // NORMAL (1) during the lease write on SQLite; PostgreSQL's commits do not block and are left as they are.
    expect(seen).toBe(kind === 'sqlite' ? 1 : 'as is');
    if (kind === 'sqlite') expect(await synchronous()).toBe(2);
  });

  it('sets synchronous=FULL back when the write fails, and passes its error on', async () => {
    await expect(
      withLeaseDurability(storage(), async (db) => {
        await sql`select * from no_such_table`.execute(db);
      }),
    ).rejects.toThrow(/no_such_table/);
    if (kind === 'sqlite') expect(await synchronous()).toBe(2);
  });

  if (kind === 'sqlite') {
    it('holds the connection: a commit started meanwhile runs after the lease write, at FULL', async () => {
      let inside = 0;
      const lease = withLeaseDurability(storage(), async (db) => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        inside = (await synchronous(db)) ?? -1;
      });
      const other = storage()
        .db.transaction()
        .execute(async (trx) => synchronous(trx));
      await lease;
      expect(inside).toBe(1);
      expect(await other).toBe(2);
    });

    it('holds the connection against a transaction known up front too (a group commit): it runs after, at FULL', async () => {
      const { db, transact } = storage();
      let inside = 0;
      const lease = withLeaseDurability(storage(), async (held) => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        inside = (await synchronous(held)) ?? -1;
      });
      const groupCommit = transact([sql`pragma synchronous`.compile(db)]);
      await lease;
      expect(inside).toBe(1);
      expect((await groupCommit)[0]?.rows).toEqual([{ synchronous: 2 }]);
    });
  }
});
