import { randomBytes } from 'node:crypto';
import { waitUntil } from '@scenario-scoring/testkit';
import { expect, it } from 'vitest';
import { forEachDatabase } from '../../../test/support/test-databases.js';
import {
  commitTestEvents,
  createTestWebhook,
  settledDelivery,
  useDeliveryFixtures,
} from '../../../test/support/test-webhooks.js';
import { SecretBox } from '../outbound/secret-box.js';

const secretBox = new SecretBox(randomBytes(32));
let tenants = 0;
const nextTenant = () => `ops-${++tenants}`;

forEachDatabase('webhook operations: operational events and the per-webhook cap', ({ storage }) => {
  const { worker, receiver: startReceiver } = useDeliveryFixtures(storage, secretBox);
  const receiver = (status: () => number) =>
    startReceiver((_r, _i, res) => {
      res.statusCode = status();
      res.end();
    });
  const bodies = (hook: { requests: { body: string }[] }) =>
    hook.requests.map(
      (request) => JSON.parse(request.body) as { type: string; data: Record<string, unknown> },
    );

  it('when a webhook answers 410, its tenant’s other webhooks taking webhook.disabled receive it, and it does not', async () => {
    const tenant = nextTenant();
    const gone = await receiver(() => 410);
    const watcher = await receiver(() => 204);
    const failing = await createTestWebhook(storage(), secretBox, { tenantId: tenant, url: gone.url });
    await createTestWebhook(storage(), secretBox, {
      tenantId: tenant,
      url: watcher.url,
      events: ['webhook.disabled'],
    });
    worker();
    await commitTestEvents(storage(), tenant);
    await waitUntil(() => watcher.requests.length === 1, 10_000, 'the webhook.disabled delivery');
    const [event] = bodies(watcher);
    expect(event).toMatchObject({
      type: 'webhook.disabled',
      data: { webhook_id: failing.id, reason: 'endpoint_gone', failing_since: null, cancelled_deliveries: 0 },
    });
    expect(gone.requests).toHaveLength(1);
  });

  it('when a delivery gives up, raises delivery.exhausted once, and none for its own exhausted delivery', async () => {
    const tenant = nextTenant();
    const down = await receiver(() => 500);
    const watcher = await receiver(() => 204);
    const failing = await createTestWebhook(storage(), secretBox, { tenantId: tenant, url: down.url });
    await createTestWebhook(storage(), secretBox, {
      tenantId: tenant,
      url: watcher.url,
      events: ['delivery.exhausted'],
    });
    worker({ config: { retryScheduleMs: [10], breakerThreshold: 0 } });
    const [eventId] = (await commitTestEvents(storage(), tenant)) as [string];
    await waitUntil(() => watcher.requests.length === 1, 10_000, 'the delivery.exhausted delivery');
    const failed = await settledDelivery(storage(), eventId);
    expect(bodies(watcher)[0]).toMatchObject({
      type: 'delivery.exhausted',
      data: {
        webhook_id: failing.id,
        delivery_id: failed.id,
        event_id: eventId,
        event_type: 'webhook.test',
        attempt_count: 2,
        last_status_code: 500,
      },
    });
    // The failing webhook takes "*": it gets the delivery.exhausted too, which fails in turn, and raises none.
    await waitUntil(
      async () =>
        (
          await storage()
            .db.selectFrom('deliveries')
            .select('status')
            .where('webhook_id', '=', failing.id)
            .where('event_type', '=', 'delivery.exhausted')
            .executeTakeFirst()
        )?.status === 'failed',
      10_000,
      'the failing webhook’s own delivery.exhausted to give up',
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    const raised = await storage()
      .db.selectFrom('events')
      .select('id')
      .where('tenant_id', '=', tenant)
      .where('type', '=', 'delivery.exhausted')
      .execute();
    expect(raised).toHaveLength(1);
  });

  it('starts a capped webhook’s attempts at least 1/cap s apart, and another webhook is not held by it', async () => {
    const tenant = nextTenant();
    const capped = await receiver(() => 204);
    const free = await receiver(() => 204);
    const cappedHook = await createTestWebhook(storage(), secretBox, { tenantId: tenant, url: capped.url });
    await storage()
      .db.updateTable('webhooks')
      .set({ max_deliveries_per_second: 5 })
      .where('id', '=', cappedHook.id)
      .execute();
    const freeHook = await createTestWebhook(storage(), secretBox, { tenantId: tenant, url: free.url });
    worker();
    const count = 8;
    await commitTestEvents(storage(), tenant, { count });
    const attemptTimes = async (webhookId: string) =>
      (
        await storage()
          .db.selectFrom('delivery_attempts as a')
          .innerJoin('deliveries as d', 'd.id', 'a.delivery_id')
          .select('a.attempted_at')
          .where('d.webhook_id', '=', webhookId)
          .execute()
      )
        .map((row) => Date.parse(row.attempted_at))
        .sort((a, b) => a - b);
    await waitUntil(
      async () => (await attemptTimes(cappedHook.id)).length === count,
      20_000,
      'every capped delivery',
    );
    const times = await attemptTimes(cappedHook.id);
    // Each attempt starts at or after its slot, slots 200 ms apart; an attempt the event loop starts late
    // (a loaded machine: up to 100 ms is allowed here) comes closer to the next, on-time one. What the cap
    // promises is held: 8 attempts span at least 7 slots, and no 900 ms hold 6 (which would need 5 gaps
    // of under 180 ms).
    expect((times.at(-1) as number) - (times[0] as number)).toBeGreaterThanOrEqual(
      ((count - 1) * 1000) / 5 - 100,
    );
    for (const start of times)
      expect(times.filter((t) => t >= start && t < start + 900).length).toBeLessThanOrEqual(5);
    const freeTimes = await attemptTimes(freeHook.id);
    expect(freeTimes).toHaveLength(count);
    expect((freeTimes.at(-1) as number) - (freeTimes[0] as number)).toBeLessThan(1000);
  });
});
