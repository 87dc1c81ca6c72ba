import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/test-databases.js';
import { openStorage, type Storage } from './storage.js';

describe('the PostgreSQL pool', () => {
  let database: TestDatabase;
  let storage: Storage;
  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    storage = await openStorage(database.options);
  });
  afterAll(async () => {
    await storage.close();
    await database.dispose();
  });

  it('survives the connection of a query in flight being terminated (a restart, a failover): the query fails, the next one runs', async () => {
    const query = sql`select pg_sleep(10)`.execute(storage.db).then(
      () => undefined,
      (error: unknown) => error,
    );
    const admin = new pg.Client({ connectionString: database.options.databaseUrl });
    await admin.connect();
    try {
      // Wait for the sleeping query, then end its backend.
      let ended = 0;
      for (let i = 0; i < 200 && ended === 0; i++) {
        const { rows } = await admin.query(
          "select pg_terminate_backend(pid) as ended from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and query like 'select pg_sleep(10)%'",
        );
        ended = rows.length;
        if (ended === 0) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(ended).toBe(1);
    } finally {
      await admin.end();
    }
    expect(await query).toMatchObject({ code: '57P01' });
    // A client checked out between two statements (a transaction waiting for the event loop) when its
    // backend is ended: the client's own 'error' must not end the process.
    const transaction = storage.db
      .transaction()
      .execute(async (trx) => {
        await sql`select set_config('application_name', 'held-transaction', false)`.execute(trx);
        const other = new pg.Client({ connectionString: database.options.databaseUrl });
        await other.connect();
        try {
          await other.query(
            "select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and application_name = 'held-transaction'",
          );
        } finally {
          await other.end();
        }
        await new Promise((resolve) => setTimeout(resolve, 200));
        await sql`select 1`.execute(trx);
      })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(await transaction).toBeInstanceOf(Error);
    // The process is still here (an unhandled 'error' would have ended the test run), and the pool serves.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const { rows } = await sql<{ one: number }>`select 1 as one`.execute(storage.db);
    expect(rows).toEqual([{ one: 1 }]);
  });
});
