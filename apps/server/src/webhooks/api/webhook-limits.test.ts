import { randomBytes } from 'node:crypto';
import type { Problem } from '@scenario-scoring/api-types';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDatabase } from '../../../test/support/test-databases.js';
import { testFeatures } from '../../../test/support/test-features.js';
import { startTestServer, type TestServer, testConfig } from '../../../test/support/test-server.js';
import { commitTestEvents, createTestWebhook } from '../../../test/support/test-webhooks.js';
import { dispatchEvents } from '../delivery/event-dispatcher.js';
import { SecretBox } from '../outbound/secret-box.js';

const URL_A = 'http://127.0.0.1:9/a';
const secretBox = new SecretBox(randomBytes(32));

// Without limits, a tenant's registrations of one URL would turn one event into as many signed POSTs.
forEachDatabase('per-tenant webhook limits', ({ storage }) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      storage: storage(),
      secretBox,
      config: { webhooks: { ...testConfig().webhooks, maxWebhooksPerTenant: 3 } },
    });
  });
  afterAll(() => server.close());

  const newTenantKey = async () =>
    (await testFeatures(storage()).keys.create(`lim-${randomBytes(6).toString('hex')}`)).key;
  const register = (key: string) =>
    server.request('/v1/webhooks/register', { key, body: { url: URL_A, events: ['*'] } });

  it('refuses a registration beyond the limit with 422 webhook_limit_reached; deleting one frees a place', async () => {
    const key = await newTenantKey();
    const ids: string[] = [];
    for (let n = 0; n < 3; n++) {
      const response = await register(key);
      expect(response.status).toBe(201);
      ids.push(((await response.json()) as { id: string }).id);
    }
    const refused = await register(key);
    expect(refused.status).toBe(422);
    expect((await refused.json()) as Problem).toMatchObject({ code: 'webhook_limit_reached', status: 422 });
    // Another tenant has its own limit.
    expect((await register(await newTenantKey())).status).toBe(201);
    // A disabled webhook still counts; a deleted one does not.
    const disable = await server.request(`/v1/webhooks/${ids[0]}`, {
      key,
      method: 'PATCH',
      body: { status: 'disabled' },
    });
    expect(disable.status).toBe(200);
    expect((await register(key)).status).toBe(422);
    expect((await server.request(`/v1/webhooks/${ids[0]}`, { key, method: 'DELETE' })).status).toBe(204);
    expect((await register(key)).status).toBe(201);
  });

  it('holds the limit when registrations race: 20 at once create exactly 3', async () => {
    const key = await newTenantKey();
    const answers = await Promise.all(Array.from({ length: 20 }, () => register(key)));
    const statuses = answers.map((response) => response.status).sort();
    expect(statuses.filter((status) => status === 201)).toHaveLength(3);
    expect(statuses.filter((status) => status === 422)).toHaveLength(17);
    const listed = await server.request('/v1/webhooks?limit=100', { key });
    expect(((await listed.json()) as { data: unknown[] }).data).toHaveLength(3);
  });

  it('fans one event out to at most maxPerEvent webhooks, the oldest first', async () => {
    const tenantId = `fan-${randomBytes(6).toString('hex')}`;
    const created: string[] = [];
    for (let n = 0; n < 4; n++) {
      created.push(
        (
          await createTestWebhook(storage(), secretBox, {
            tenantId,
            url: URL_A,
            now: new Date(Date.now() - 1000),
          })
        ).id,
      );
    }
    const [eventId] = (await commitTestEvents(storage(), tenantId)) as [string];
    await dispatchEvents(storage(), new Date(), { maxPerEvent: 2, limit: 10_000 });
    const deliveries = await storage()
      .db.selectFrom('deliveries')
      .select('webhook_id')
      .where('event_id', '=', eventId)
      .orderBy('webhook_id')
      .execute();
    expect(deliveries.map((d) => d.webhook_id)).toEqual(created.sort().slice(0, 2));
  });
});
