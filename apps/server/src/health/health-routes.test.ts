import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';
import { openStorage } from '../storage/storage.js';
import { InstanceLifecycle } from './instance-lifecycle.js';

forEachDatabase('health checks', ({ storage, database }) => {
  let server: TestServer;
  let unreachable: TestServer;
  let lifecycle: InstanceLifecycle;
  let cycling: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ storage: storage() });
    // A closed storage: every query on it fails, as when the database is down.
    const down = await openStorage(database().options);
    await down.close();
    unreachable = await startTestServer({ storage: down });
    lifecycle = new InstanceLifecycle('starting');
    cycling = await startTestServer({ storage: storage(), lifecycle });
  });
  afterAll(async () => {
    await server.close();
    await unreachable.close();
    await cycling.close();
  });

  it('/healthz answers 200 while the process runs', async () => {
    const response = await server.request('/healthz');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
  });

  it('/readyz answers 200 ready with each check when the database answers', async () => {
    const response = await server.request('/readyz');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      status: 'ready',
      checks: { database: true, migrations: true, workers: true, log: true },
    });
  });

  it('/readyz answers 503 with Retry-After when the database does not answer', async () => {
    const response = await unreachable.request('/readyz');
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('5');
    expect(await response.json()).toEqual({
      status: 'unavailable',
      // Whether the migrations are applied cannot be read from a database that does not answer.
      checks: { database: false, migrations: false, workers: true, log: false },
    });
    expect((await unreachable.request('/healthz')).status).toBe(200);
  });

  it('/readyz answers 503 starting, then ready, then 503 draining as the instance goes through its life', async () => {
    const starting = await cycling.request('/readyz');
    expect(starting.status).toBe(503);
    expect(await starting.json()).toMatchObject({ status: 'starting' });
    lifecycle.markRunning();
    expect((await cycling.request('/readyz')).status).toBe(200);
    lifecycle.markDraining();
    const draining = await cycling.request('/readyz');
    expect(draining.status).toBe(503);
    expect(draining.headers.get('connection')).toBe('close');
    expect(await draining.json()).toEqual({
      status: 'draining',
      checks: { database: true, migrations: true, workers: true, log: true },
    });
    // Other requests are still served while draining, each closing its connection.
    const health = await cycling.request('/healthz');
    expect(health.status).toBe(200);
    expect(health.headers.get('connection')).toBe('close');
  });

  it('/readyz reads the applied migrations from the database: one missing answers 503 unavailable', async () => {
    const { db } = storage();
    const { rows } = await sql<{ name: string; timestamp: string }>`
      select name, timestamp from kysely_migration order by name desc limit 1`.execute(db);
    const [last] = rows;
    if (last === undefined) throw new Error('no migration row');
    await sql`delete from kysely_migration where name = ${last.name}`.execute(db);
    try {
      const response = await server.request('/readyz');
      expect(response.status).toBe(503);
      expect(await response.json()).toEqual({
        status: 'unavailable',
        checks: { database: true, migrations: false, workers: true, log: true },
      });
    } finally {
      await sql`insert into kysely_migration (name, timestamp) values (${last.name}, ${last.timestamp})`.execute(
        db,
      );
    }
    expect((await server.request('/readyz')).status).toBe(200);
  });
});
