import { sql } from 'kysely';
import { expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { leaseWrite } from './lease-write.js';

forEachDatabase('leaseWrite', ({ kind, storage }) => {
  const synchronous = async (db = storage().db) =>
    (await sql<{ synchronous: number }>`pragma synchronous`.execute(db)).rows[0]?.synchronous;

  it('commits the write and answers its rows', async () => {
    const { db } = storage();
    await db.insertInto('tenants').values({ id: 'lease-a', created_at: 'then' }).execute();
    const { rows } = await leaseWrite(
      storage(),
      db
        .updateTable('tenants')
        .set({ created_at: 'now' })
        .where('id', '=', 'lease-a')
        .returning('id')
        .compile(),
    );
    expect(rows).toEqual([{ id: 'lease-a' }]);
    expect(await db.selectFrom('tenants').select('created_at').where('id', '=', 'lease-a').execute()).toEqual(
      [{ created_at: 'now' }],
    );
  });

  it('passes a failed write’s error on, and keeps nothing of it', async () => {
    const { db } = storage();
    await db.insertInto('tenants').values({ id: 'lease-b', created_at: 'then' }).execute();
    // The update is valid; the returning of a column that does not exist fails the statement.
    await expect(
      leaseWrite(
        storage(),
        sql`update tenants set created_at = 'now' where id = 'lease-b' returning nope`.compile(db),
      ),
    ).rejects.toThrow(/nope/);
    expect(await db.selectFrom('tenants').select('created_at').where('id', '=', 'lease-b').execute()).toEqual(
      [{ created_at: 'then' }],
    );
    if (kind === 'sqlite') expect(await synchronous()).toBe(2);
  });

  if (kind === 'sqlite') {
    it('runs without a disk flush of its own (synchronous=NORMAL), and leaves the connection at FULL', async () => {
      const { db } = storage();
      const { rows } = await leaseWrite(
        storage(),
        sql<{ synchronous: number }>`pragma synchronous`.compile(db),
      );
      expect(rows).toEqual([{ synchronous: 1 }]);
      expect(await synchronous()).toBe(2);
    });

    it('waits for a transaction holding the connection, and neither it nor a group commit queued after runs at NORMAL', async () => {
      const { db, transact } = storage();
      const order: string[] = [];
      const held = db.transaction().execute(async (trx) => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        order.push(`held ${await synchronous(trx)}`);
      });
      await new Promise((resolve) => setTimeout(resolve, 5));
      const lease = leaseWrite(storage(), sql<{ synchronous: number }>`pragma synchronous`.compile(db)).then(
        ({ rows }) => order.push(`lease ${rows[0]?.synchronous}`),
      );
      const groupCommit = transact([sql`pragma synchronous`.compile(db)]).then((results) =>
        order.push(`group ${(results[0]?.rows[0] as { synchronous: number } | undefined)?.synchronous}`),
      );
      await Promise.all([held, lease, groupCommit]);
      expect(order).toEqual(['held 2', 'lease 1', 'group 2']);
    });
  }
});
