import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/test-databases.js';
import { closeTestStorage, testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';
import { openStorage, type Storage } from '../storage/storage.js';

const LIMIT = 4;

describe('the rate limit shared by two instances on one PostgreSQL', () => {
  let database: TestDatabase;
  const storages: Storage[] = [];
  const servers: TestServer[] = [];
  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    for (let n = 0; n < 2; n++) {
      const storage = await openStorage(database.options);
      storages.push(storage);
      servers.push(await startTestServer({ storage, config: { rateLimitPerSecond: LIMIT } }));
    }
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.close()));
    await Promise.all(storages.map((storage) => closeTestStorage(storage)));
    await database.dispose();
  });

  it('grants one budget per API key across instances, not one per instance', async () => {
    const [a, b] = servers as [TestServer, TestServer];
    const { key } = await testFeatures(storages[0] as Storage).keys.create('shared-limit');
    const statuses: number[] = [];
    // Alternating between the instances within one window: only LIMIT requests in all are granted.
    for (let i = 0; i < LIMIT * 2; i++) {
      const response = await (i % 2 === 0 ? a : b).request('/v1/scoring/policies/DE', { key });
      statuses.push(response.status);
      if (response.status === 429) {
        expect(response.headers.get('ratelimit')).toMatch(/^"default";r=0;t=1$/);
        expect(Number(response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      }
    }
    expect(statuses.slice(0, LIMIT)).toEqual(Array(LIMIT).fill(200));
    expect(statuses.slice(LIMIT)).toEqual(Array(LIMIT).fill(429));
    // The budget comes back after the window, on either instance.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect((await b.request('/v1/scoring/policies/DE', { key })).status).toBe(200);
  });
});
