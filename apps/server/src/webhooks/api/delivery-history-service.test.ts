import { randomBytes } from 'node:crypto';
import type {
  AttemptList,
  Delivery,
  DeliveryList,
  RegisteredWebhook,
  WebhookTestEvent,
} from '@scenario-scoring/api-types';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDatabase } from '../../../test/support/test-databases.js';
import { testFeatures } from '../../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../../test/support/test-server.js';
import { newId } from '../../common/ids.js';
import { DELIVERY_ROW_BYTES, readTenantUsage, rowBytes } from '../../quota/tenant-usage.js';

forEachDatabase('webhook deliveries: test, list, attempts, redeliver', ({ storage }) => {
  let server: TestServer;
  let wakeUps = 0;
  beforeAll(async () => {
    server = await startTestServer({ storage: storage() });
    testFeatures(storage()).outbox.subscribe(() => {
      wakeUps += 1;
    });
  });
  afterAll(() => server.close());

  const newTenantKey = async () =>
    (await testFeatures(storage()).keys.create(`t-${randomBytes(6).toString('hex')}`)).key;
  const register = async (key: string) => {
    const response = await server.request('/v1/webhooks/register', {
      key,
      body: { url: 'http://127.0.0.1:9/hook', events: ['*'] },
    });
    return (await response.json()) as RegisteredWebhook;
  };
  const sendTest = async (key: string, id: string) => {
    const response = await server.request(`/v1/webhooks/${id}/test`, { key, method: 'POST' });
    expect(response.status, await response.clone().text()).toBe(202);
    return (await response.json()) as Delivery;
  };
  const deliveryRow = (id: string) =>
    storage().db.selectFrom('deliveries').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

  it('sends a test event: 202 with the pending delivery, its event written dispatched, and workers woken', async () => {
    const key = await newTenantKey();
    const webhook = await register(key);
    const before = wakeUps;
    const delivery = await sendTest(key, webhook.id);
    expect(delivery).toMatchObject({
      webhook_id: webhook.id,
      event_type: 'webhook.test',
      status: 'pending',
      attempt_count: 0,
      last_attempt_at: null,
    });
    expect(delivery.id).toMatch(/^dlv_/);
    expect(delivery.next_attempt_at).toBe(delivery.created_at);
    expect(wakeUps).toBe(before + 1);

    const event = await storage()
      .db.selectFrom('events')
      .selectAll()
      .where('id', '=', delivery.event_id)
      .executeTakeFirstOrThrow();
    expect(event.type).toBe('webhook.test');
    expect(event.dispatched_at).toBe(event.created_at);
    const payload = JSON.parse(event.payload) as WebhookTestEvent;
    expect(payload).toMatchObject({ id: delivery.event_id, type: 'webhook.test' });
    expect(payload.data.webhook_id).toBe(webhook.id);
    expect(await deliveryRow(delivery.id)).toMatchObject({ status: 'pending', next_trigger: 'scheduled' });
  });

  it("counts a test event's delivery in its tenant's storage, as a fan-out's (and its event)", async () => {
    const key = await newTenantKey();
    const webhook = await register(key);
    const tenantId = (
      await storage()
        .db.selectFrom('webhooks')
        .select('tenant_id')
        .where('id', '=', webhook.id)
        .executeTakeFirstOrThrow()
    ).tenant_id;
    const before = await readTenantUsage(storage().db, tenantId);
    const delivery = await sendTest(key, webhook.id);
    const event = await storage()
      .db.selectFrom('events')
      .select('payload')
      .where('id', '=', delivery.event_id)
      .executeTakeFirstOrThrow();
    expect((await readTenantUsage(storage().db, tenantId)) - before).toBe(
      DELIVERY_ROW_BYTES + rowBytes(event.payload),
    );
  });

  it('lists deliveries newest first with status, attempt count and attempt times, a page at a time', async () => {
    const key = await newTenantKey();
    const webhook = await register(key);
    const sent: Delivery[] = [];
    for (let i = 0; i < 3; i += 1) sent.push(await sendTest(key, webhook.id));
    const at = '2026-11-22T10:00:05.000Z';
    await storage()
      .db.updateTable('deliveries')
      .set({ status: 'succeeded', attempt_count: 2, last_attempt_at: at, next_attempt_at: null })
      .where('id', '=', sent[0]?.id ?? '')
      .execute();
    const first = (await (
      await server.request(`/v1/webhooks/${webhook.id}/deliveries?limit=2`, { key })
    ).json()) as DeliveryList;
    expect(first.data).toHaveLength(2);
    expect(first.next_cursor).not.toBeNull();
    const second = (await (
      await server.request(`/v1/webhooks/${webhook.id}/deliveries?limit=2&cursor=${first.next_cursor}`, {
        key,
      })
    ).json()) as DeliveryList;
    expect(second.next_cursor).toBeNull();
    const listed = [...first.data, ...second.data];
    expect(listed.map((d) => d.id)).toEqual(
      sent
        .map((d) => d.id)
        .sort()
        .reverse(),
    );
    expect(listed.find((d) => d.id === sent[0]?.id)).toMatchObject({
      status: 'succeeded',
      attempt_count: 2,
      last_attempt_at: at,
      next_attempt_at: null,
    });
  });

  it('lists a delivery’s attempts newest first: status code, duration, error, response body, trigger', async () => {
    const key = await newTenantKey();
    const webhook = await register(key);
    const delivery = await sendTest(key, webhook.id);
    const attempts = [
      {
        status_code: 0,
        duration_ms: 3,
        error: 'connect ECONNREFUSED',
        response_body: null,
        trigger: 'scheduled',
      },
      { status_code: 500, duration_ms: 12, error: 'HTTP 500', response_body: 'oops', trigger: 'scheduled' },
      { status_code: 200, duration_ms: 84, error: null, response_body: 'ok', trigger: 'manual' },
    ] as const;
    // Ids sorted up front: the order of the list is the order of the ids, whatever the clock did.
    const ids = attempts.map(() => newId('att')).sort();
    for (const [i, attempt] of attempts.entries()) {
      await storage()
        .db.insertInto('delivery_attempts')
        .values({
          id: ids[i] ?? '',
          delivery_id: delivery.id,
          attempted_at: `2026-11-22T10:00:0${i}.000Z`,
          ...attempt,
        })
        .execute();
    }
    const path = `/v1/webhooks/${webhook.id}/deliveries/${delivery.id}/attempts`;
    const page = (await (await server.request(`${path}?limit=2`, { key })).json()) as AttemptList;
    expect(page.data).toEqual([
      {
        id: ids[2],
        delivery_id: delivery.id,
        attempted_at: '2026-11-22T10:00:02.000Z',
        ...attempts[2],
        response_body_replaced: false,
        response_body_truncated: false,
      },
      {
        id: ids[1],
        delivery_id: delivery.id,
        attempted_at: '2026-11-22T10:00:01.000Z',
        ...attempts[1],
        response_body_replaced: false,
        response_body_truncated: false,
      },
    ]);
    const rest = (await (
      await server.request(`${path}?cursor=${page.next_cursor}`, { key })
    ).json()) as AttemptList;
    expect(rest).toEqual({
      data: [
        {
          id: ids[0],
          delivery_id: delivery.id,
          attempted_at: '2026-11-22T10:00:00.000Z',
          ...attempts[0],
          response_body_replaced: false,
          response_body_truncated: false,
        },
      ],
      next_cursor: null,
    });
  });

  it('redelivers a failed delivery: 202, pending now, as a manual attempt of the same event', async () => {
    const key = await newTenantKey();
    const webhook = await register(key);
    const delivery = await sendTest(key, webhook.id);
    await storage()
      .db.updateTable('deliveries')
      .set({ status: 'failed', attempt_count: 10, next_attempt_at: null })
      .where('id', '=', delivery.id)
      .execute();
    const before = wakeUps;
    const response = await server.request(`/v1/webhooks/${webhook.id}/deliveries/${delivery.id}/redeliver`, {
      key,
      method: 'POST',
    });
    expect(response.status).toBe(202);
    const queued = (await response.json()) as Delivery;
    expect(queued).toMatchObject({
      id: delivery.id,
      event_id: delivery.event_id,
      status: 'pending',
      attempt_count: 10,
    });
    expect(queued.next_attempt_at).not.toBeNull();
    expect(await deliveryRow(delivery.id)).toMatchObject({ status: 'pending', next_trigger: 'manual' });
    expect(wakeUps).toBe(before + 1);
  });

  it('cancels pending deliveries when the webhook is disabled or deleted, and leaves finished ones alone', async () => {
    const key = await newTenantKey();
    for (const change of ['disable', 'delete'] as const) {
      const webhook = await register(key);
      const pending = await sendTest(key, webhook.id);
      const done = await sendTest(key, webhook.id);
      await storage()
        .db.updateTable('deliveries')
        .set({ status: 'succeeded' })
        .where('id', '=', done.id)
        .execute();
      const response =
        change === 'disable'
          ? await server.request(`/v1/webhooks/${webhook.id}`, {
              key,
              method: 'PATCH',
              body: { status: 'disabled' },
            })
          : await server.request(`/v1/webhooks/${webhook.id}`, { key, method: 'DELETE' });
      expect(response.status).toBe(change === 'disable' ? 200 : 204);
      expect(await deliveryRow(pending.id), change).toMatchObject({
        status: 'cancelled',
        next_attempt_at: null,
      });
      expect((await deliveryRow(done.id)).status).toBe('succeeded');
    }
  });

  it("answers an unknown delivery, or another webhook's, or another tenant's, with 404 not_found", async () => {
    const key = await newTenantKey();
    const mine = await register(key);
    const sibling = await register(key);
    const delivery = await sendTest(key, mine.id);
    const otherKey = await newTenantKey();
    const cases = [
      [key, mine.id, newId('dlv')],
      [key, sibling.id, delivery.id],
      [otherKey, mine.id, delivery.id],
    ] as const;
    for (const [caller, webhookId, deliveryId] of cases) {
      const base = `/v1/webhooks/${webhookId}/deliveries/${deliveryId}`;
      for (const [method, path] of [
        ['POST', `${base}/redeliver`],
        ['GET', `${base}/attempts`],
      ] as const) {
        const response = await server.request(path, { key: caller, method });
        expect(response.status, `${method} ${path}`).toBe(404);
        expect(await response.json()).toMatchObject({ code: 'not_found' });
      }
    }
    expect((await deliveryRow(delivery.id)).next_trigger).toBe('scheduled');
  });
});
