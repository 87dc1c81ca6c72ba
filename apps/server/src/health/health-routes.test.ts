import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDatabase } from '../storage/test-databases.js';
import { startTestServer, type TestServer } from '../test-server.js';

forEachDatabase('health checks', ({ storage }) => {
  let server: TestServer;
  let unreachable: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ storage: storage() });
    const real = storage();
    const down = Object.create(real) as typeof real;
    down.ping = async () => false;
    unreachable = await startTestServer({ storage: down });
  });
  afterAll(async () => {
    await server.close();
    await unreachable.close();
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
      checks: { database: true, migrations: true, workers: true },
    });
  });

  it('/readyz answers 503 with Retry-After when the database does not answer', async () => {
    const response = await unreachable.request('/readyz');
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('5');
    expect(await response.json()).toEqual({
      status: 'unavailable',
      checks: { database: false, migrations: true, workers: true },
    });
    expect((await unreachable.request('/healthz')).status).toBe(200);
  });
});
