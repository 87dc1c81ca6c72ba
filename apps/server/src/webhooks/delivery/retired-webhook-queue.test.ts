import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { RegisteredWebhook } from '@scenario-scoring/api-types';
import { waitUntil } from '@scenario-scoring/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDatabase } from '../../../test/support/test-databases.js';
import { testFeatures } from '../../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../../test/support/test-server.js';
import {
  commitTestEvents,
  deliveryStatuses,
  useDeliveryFixtures,
} from '../../../test/support/test-webhooks.js';
import { SecretBox } from '../outbound/secret-box.js';
import { RetiredWebhookSignal } from '../webhook-registry.js';
import { STATUS_RECHECK_MS } from './delivery-scheduler.js';
import type { DeliveryWorker } from './delivery-worker.js';

const secretBox = new SecretBox(randomBytes(32));

/**
 * Two attempts of the tenant in flight at once (its share of 8 slots, capped at 2), and as many claimed
 * ahead and queued in the worker (the prefetch: the lease is over three timeouts): the queued ones are
 * those a DELETE must stop. No endpoint throttle, so nothing else holds them back.
 */
const CONFIG = { concurrency: 8, tenantConcurrency: 2, breakerThreshold: 0 };
const IN_FLIGHT = 2;

/**
 * A webhook deleted or disabled (by the API, or by the recorder for failing) while a worker of this
 * instance holds deliveries of it claimed but not yet started: none of those is attempted after the
 * answer (after the disabling commits). The attempts in flight at that moment may end.
 */
forEachDatabase('deliveries queued in a worker when their webhook is deleted or disabled', ({ storage }) => {
  const { worker, receiver } = useDeliveryFixtures(storage, secretBox);
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ storage: storage(), secretBox });
  });
  afterAll(() => server.close());

  /**
   * A receiver that holds every request until `release`, then answers 200 (and at once from then on);
   * `answerFirst` answers the oldest held request with `status` now.
   */
  const holdingReceiver = async () => {
    const held: ServerResponse[] = [];
    let holding = true;
    const hook = await receiver((_request, _index, res) => {
      if (holding) held.push(res);
      else res.end('ok');
    });
    return {
      ...hook,
      answerFirst(status: number) {
        const res = held.shift() as ServerResponse;
        res.statusCode = status;
        res.end();
      },
      release() {
        holding = false;
        for (const res of held.splice(0)) res.end('ok');
      },
    };
  };

  /** A tenant with a webhook to `url`, registered through the API. */
  const registered = async (url: string) => {
    const key = (await testFeatures(storage()).keys.create(`retired-${randomBytes(6).toString('hex')}`)).key;
    const response = await server.request('/v1/webhooks/register', { key, body: { url, events: ['*'] } });
    expect(response.status).toBe(201);
    const webhook = (await response.json()) as RegisteredWebhook;
    const { tenant_id: tenantId } = await storage()
      .db.selectFrom('webhooks')
      .select('tenant_id')
      .where('id', '=', webhook.id)
      .executeTakeFirstOrThrow();
    return { key, id: webhook.id, tenantId };
  };

  const claimedBy = async (started: DeliveryWorker, webhookId: string) =>
    Number(
      (
        await storage()
          .db.selectFrom('deliveries')
          .select((eb) => eb.fn.countAll<number | string>().as('count'))
          .where('webhook_id', '=', webhookId)
          .where('locked_by', '=', started.workerId)
          .executeTakeFirstOrThrow()
      ).count,
    );

  const statuses = (webhookId: string) => deliveryStatuses(storage(), webhookId);

  /**
   * A webhook to a holding receiver with a backlog of 10 deliveries, and a worker (of this instance, or
   * of another: `retired`) holding two attempts in flight and more claimed and queued.
   */
  const withQueuedDeliveries = async (options: { retired?: RetiredWebhookSignal; config?: object } = {}) => {
    const hook = await holdingReceiver();
    const webhook = await registered(hook.url);
    const started = worker({
      config: { ...CONFIG, ...options.config },
      ...(options.retired && { retired: options.retired }),
    });
    await commitTestEvents(storage(), webhook.tenantId, { count: 10 });
    await waitUntil(
      async () =>
        hook.requests.length === IN_FLIGHT && (await claimedBy(started, webhook.id)) >= IN_FLIGHT + 1,
      10_000,
      'two attempts in flight, and deliveries queued behind them',
    );
    // Nothing more starts while the receiver holds the two.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(hook.requests).toHaveLength(IN_FLIGHT);
    return { hook, webhook, started };
  };

  /** Lets every held request end, waits for their outcomes, and a while for any attempt that would start. */
  const releaseAndSettle = async (hook: Awaited<ReturnType<typeof holdingReceiver>>, webhookId: string) => {
    hook.release();
    await waitUntil(
      async () =>
        Number(
          (
            await storage()
              .db.selectFrom('delivery_attempts as a')
              .innerJoin('deliveries as d', 'd.id', 'a.delivery_id')
              .select((eb) => eb.fn.countAll<number | string>().as('count'))
              .where('d.webhook_id', '=', webhookId)
              .executeTakeFirstOrThrow()
          ).count,
        ) >= hook.requests.length,
      10_000,
      'the attempts in flight recorded',
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
  };

  it('after DELETE answers 204, no queued delivery of the webhook is attempted', async () => {
    const { hook, webhook } = await withQueuedDeliveries();
    const response = await server.request(`/v1/webhooks/${webhook.id}`, {
      key: webhook.key,
      method: 'DELETE',
    });
    expect(response.status).toBe(204);
    const atAnswer = hook.requests.length;
    await releaseAndSettle(hook, webhook.id);
    expect(hook.requests).toHaveLength(atAnswer);
    // The two in flight ended after the cancellation: their outcomes did not overwrite it.
    expect(await statuses(webhook.id)).toEqual({ cancelled: 10 });
  });

  it('after PATCH disabled answers, no queued delivery of the webhook is attempted', async () => {
    const { hook, webhook } = await withQueuedDeliveries();
    const response = await server.request(`/v1/webhooks/${webhook.id}`, {
      key: webhook.key,
      method: 'PATCH',
      body: { status: 'disabled' },
    });
    expect(response.status).toBe(200);
    const atAnswer = hook.requests.length;
    await releaseAndSettle(hook, webhook.id);
    expect(hook.requests).toHaveLength(atAnswer);
    expect(await statuses(webhook.id)).toEqual({ cancelled: 10 });
  });

  it.each([
    ['410 (endpoint_gone)', 410],
    ['500 past WEBHOOK_DISABLE_AFTER (failing)', 500],
  ])(
    'once an attempt answered %s disables the webhook, no queued delivery of it is attempted',
    async (_name, status) => {
      const { hook, webhook } = await withQueuedDeliveries({ config: { disableAfterFailingMs: 1 } });
      hook.answerFirst(status);
      // Its slot starts the next queued delivery at once, before the outcome is recorded: in flight, it may end.
      await waitUntil(
        async () =>
          hook.requests.length === IN_FLIGHT + 1 &&
          (
            await storage()
              .db.selectFrom('webhooks')
              .select('status')
              .where('id', '=', webhook.id)
              .executeTakeFirstOrThrow()
          ).status === 'disabled',
        10_000,
        'the webhook disabled by the recorder',
      );
      const atDisabling = hook.requests.length;
      await releaseAndSettle(hook, webhook.id);
      expect(hook.requests).toHaveLength(atDisabling);
      expect((await statuses(webhook.id)).pending).toBeUndefined();
    },
  );

  it('after DELETE answers 204, no delivery of a capped webhook waiting for its start slot is attempted', async () => {
    const hook = await receiver();
    const webhook = await registered(hook.url);
    // Start slots 500 ms apart: the worker reserves those within 1 s, and its attempts wait for them.
    await storage()
      .db.updateTable('webhooks')
      .set({ max_deliveries_per_second: 2 })
      .where('id', '=', webhook.id)
      .execute();
    worker({ config: CONFIG });
    await commitTestEvents(storage(), webhook.tenantId, { count: 5 });
    await waitUntil(() => hook.requests.length === 1, 10_000, 'the first attempt');
    const response = await server.request(`/v1/webhooks/${webhook.id}`, {
      key: webhook.key,
      method: 'DELETE',
    });
    expect(response.status).toBe(204);
    const atAnswer = hook.requests.length;
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(hook.requests).toHaveLength(atAnswer);
    expect((await statuses(webhook.id)).pending).toBeUndefined();
  });

  it(`a worker of another instance starts none of them once it held them ${STATUS_RECHECK_MS} ms (it looks the webhook up again)`, async () => {
    // This worker is not told of the deletion: it stands for a worker of another instance.
    const { hook, webhook } = await withQueuedDeliveries({ retired: new RetiredWebhookSignal() });
    const response = await server.request(`/v1/webhooks/${webhook.id}`, {
      key: webhook.key,
      method: 'DELETE',
    });
    expect(response.status).toBe(204);
    const atAnswer = hook.requests.length;
    await new Promise((resolve) => setTimeout(resolve, STATUS_RECHECK_MS + 100));
    await releaseAndSettle(hook, webhook.id);
    expect(hook.requests).toHaveLength(atAnswer);
    expect(await statuses(webhook.id)).toEqual({ cancelled: 10 });
  });
});
