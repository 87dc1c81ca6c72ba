import { randomBytes } from 'node:crypto';
import { waitUntil } from '@scenario-scoring/testkit';
import { expect, it } from 'vitest';
import { forEachDatabase } from '../../../test/support/test-databases.js';
import { testFeatures } from '../../../test/support/test-features.js';
import {
  attemptsOf,
  commitTestEvents,
  createTestWebhook,
  deliveryOf,
  FakeClock,
  settledDelivery,
  testWebhookConfig,
  useDeliveryFixtures,
} from '../../../test/support/test-webhooks.js';
import { systemClock } from '../../common/clock.js';
import { TenantKeyedHash } from '../../keys/tenant-keyed-hash.js';
import { queueManualAttempt } from '../api/delivery-history-store.js';
import { updateWebhook } from '../api/webhook-service.js';
import { SecretBox } from '../outbound/secret-box.js';
import { dispatchEvents } from './event-dispatcher.js';

const secretBox = new SecretBox(randomBytes(32));
const DAY_MS = 86_400_000;
let tenants = 0;
const nextTenant = () => `disable-${++tenants}`;

forEachDatabase('disabling webhooks and manual attempts', ({ storage }) => {
  const { worker, receiver: startReceiver } = useDeliveryFixtures(storage, secretBox);
  const receiver = (status: () => number) =>
    startReceiver((_r, _i, res) => {
      res.statusCode = status();
      res.end();
    });
  const webhookOf = (id: string) =>
    storage().db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

  it('when a webhook answers 410, disables it at once and cancels its other pending deliveries', async () => {
    const tenant = nextTenant();
    let status = 500;
    const hook = await receiver(() => status);
    const { id } = await createTestWebhook(storage(), secretBox, { tenantId: tenant, url: hook.url });
    worker({ config: { retryScheduleMs: [60_000] } });
    const [waiting] = (await commitTestEvents(storage(), tenant)) as [string];
    await settledDelivery(storage(), waiting, (d) => d.attempt_count === 1);

    status = 410;
    const [gone] = (await commitTestEvents(storage(), tenant)) as [string];
    expect(await settledDelivery(storage(), gone)).toMatchObject({ status: 'failed', attempt_count: 1 });
    expect(await webhookOf(id)).toMatchObject({ status: 'disabled', disabled_reason: 'endpoint_gone' });
    expect(await deliveryOf(storage(), waiting)).toMatchObject({
      status: 'cancelled',
      next_attempt_at: null,
    });

    // A disabled webhook receives nothing: no delivery is even created for a new event.
    const [later] = (await commitTestEvents(storage(), tenant)) as [string];
    await waitUntil(
      () =>
        storage()
          .db.selectFrom('events')
          .select('id')
          .where('id', '=', later)
          .where('dispatched_at', 'is not', null)
          .executeTakeFirst(),
      10_000,
      'the fan-out of the later event',
    );
    expect(await deliveryOf(storage(), later)).toBeUndefined();
    expect(hook.requests).toHaveLength(2);
  });

  it('disables a webhook whose deliveries only failed for five days; once re-enabled, it receives again', async () => {
    const tenant = nextTenant();
    let status = 500;
    const hook = await receiver(() => status);
    const clock = new FakeClock();
    // Subscribed to the test events only: the `delivery.exhausted` of each failed delivery, also failing on
    // this receiver, could otherwise be the attempt that disables the webhook, leaving `last` pending.
    const { id } = await createTestWebhook(storage(), secretBox, {
      tenantId: tenant,
      url: hook.url,
      events: ['webhook.test'],
      now: clock.now(),
    });
    // Six failures in a row: no circuit breaker here, which would put the later attempts off.
    worker({ clock, config: { retryScheduleMs: [10], breakerThreshold: 0 } });

    const [first] = (await commitTestEvents(storage(), tenant, { now: clock.now() })) as [string];
    const failed = await settledDelivery(storage(), first);
    expect(failed).toMatchObject({ status: 'failed', attempt_count: 2 });
    const failingSince = (await webhookOf(id)).failing_since;
    expect(failingSince).toBe((await attemptsOf(storage(), failed.id))[0]?.attempted_at);

    clock.advance(5 * DAY_MS - 60_000);
    const [almost] = (await commitTestEvents(storage(), tenant, { now: clock.now() })) as [string];
    await settledDelivery(storage(), almost);
    expect(await webhookOf(id)).toMatchObject({ status: 'active', failing_since: failingSince });

    clock.advance(120_000);
    const [last] = (await commitTestEvents(storage(), tenant, { now: clock.now() })) as [string];
    await settledDelivery(storage(), last);
    expect(await webhookOf(id)).toMatchObject({ status: 'disabled', disabled_reason: 'failing' });

    // Re-enabling is a PATCH in the API: here, the row it writes.
    await storage()
      .db.updateTable('webhooks')
      .set({
        status: 'active',
        disabled_reason: null,
        failing_since: null,
        updated_at: clock.now().toISOString(),
      })
      .where('id', '=', id)
      .execute();
    status = 500;
    const [failingAgain] = (await commitTestEvents(storage(), tenant, { now: clock.now() })) as [string];
    await settledDelivery(storage(), failingAgain);
    expect((await webhookOf(id)).failing_since).not.toBeNull();
    status = 204;
    const [received] = (await commitTestEvents(storage(), tenant, { now: clock.now() })) as [string];
    expect(await settledDelivery(storage(), received)).toMatchObject({ status: 'succeeded' });
    // Any success resets the clock.
    expect(await webhookOf(id)).toMatchObject({ status: 'active', failing_since: null });
  });

  it('cancels, without attempting, the deliveries of a webhook deleted or disabled after the fan-out', async () => {
    const tenant = nextTenant();
    const hook = await receiver(() => 200);
    const deleted = await createTestWebhook(storage(), secretBox, { tenantId: tenant, url: hook.url });
    const disabled = await createTestWebhook(storage(), secretBox, { tenantId: tenant, url: hook.url });
    const [eventId] = (await commitTestEvents(storage(), tenant)) as [string];
    while ((await dispatchEvents(storage(), new Date())).dispatched > 0);
    const now = new Date().toISOString();
    await storage()
      .db.updateTable('webhooks')
      .set({ deleted_at: now })
      .where('id', '=', deleted.id)
      .execute();
    await storage()
      .db.updateTable('webhooks')
      .set({ status: 'disabled', disabled_reason: 'manual' })
      .where('id', '=', disabled.id)
      .execute();
    worker();
    const cancelled = async () => {
      const rows = await storage()
        .db.selectFrom('deliveries')
        .select('status')
        .where('event_id', '=', eventId)
        .execute();
      return rows.length === 2 && rows.every((row) => row.status === 'cancelled');
    };
    await waitUntil(cancelled, 10_000, 'both deliveries cancelled');
    expect(hook.requests).toHaveLength(0);
  });

  it('keeps a delivery cancelled when its webhook is disabled while an attempt of it is in flight', async () => {
    const tenant = nextTenant();
    const answers: (() => void)[] = [];
    const hook = await startReceiver((_r, _i, res) => {
      answers.push(() => {
        res.statusCode = 500;
        res.end();
      });
    });
    const { id } = await createTestWebhook(storage(), secretBox, { tenantId: tenant, url: hook.url });
    worker({ config: { retryScheduleMs: [60_000] } });
    const [eventId] = (await commitTestEvents(storage(), tenant)) as [string];
    await waitUntil(() => answers.length === 1, 10_000, 'the attempt in flight');

    const deps = {
      storage: storage(),
      outbox: testFeatures(storage()).outbox,
      retired: testFeatures(storage()).retiredWebhooks,
      policy: testWebhookConfig(),
      secretBox,
      keyedHash: new TenantKeyedHash(randomBytes(32)),
      clock: systemClock,
    };
    await updateWebhook(deps, tenant, id, { status: 'disabled' });
    answers[0]?.();
    const delivery = await settledDelivery(storage(), eventId);
    await waitUntil(
      async () => (await attemptsOf(storage(), delivery.id)).length === 1,
      10_000,
      'the attempt recorded',
    );
    // The 500 would have made it pending for a retry: the attempt's write lost its claim to the cancel.
    expect(await deliveryOf(storage(), eventId)).toMatchObject({
      status: 'cancelled',
      next_attempt_at: null,
    });
  });

  it('records a redelivery as manual; a failing one returns a succeeded delivery to succeeded, a failed one to failed', async () => {
    const tenant = nextTenant();
    let status = 200;
    const hook = await receiver(() => status);
    await createTestWebhook(storage(), secretBox, { tenantId: tenant, url: hook.url });
    // No circuit breaker: with the `delivery.exhausted` of the failed delivery (also answered 500, and
    // retried), the endpoint's failures would reach its threshold and put the redeliveries off 30 s.
    worker({ config: { retryScheduleMs: [10], breakerThreshold: 0 } });
    const [ok] = (await commitTestEvents(storage(), tenant)) as [string];
    await settledDelivery(storage(), ok);
    status = 500; // from now on; the schedule has one retry, so the next delivery fails twice and ends failed
    const [failedEvent] = (await commitTestEvents(storage(), tenant)) as [string];
    await settledDelivery(storage(), failedEvent);

    // What the redeliver operation writes: a manual attempt, due now.
    const redeliver = async (eventId: string) => {
      const { id } = (await deliveryOf(storage(), eventId)) as { id: string };
      await storage()
        .db.transaction()
        .execute((trx) => queueManualAttempt(trx, id, new Date().toISOString()));
    };
    await redeliver(ok);
    await redeliver(failedEvent);
    const okAfter = await settledDelivery(
      storage(),
      ok,
      (d) => d.attempt_count === 2 && d.status !== 'pending',
    );
    const failedAfter = await settledDelivery(
      storage(),
      failedEvent,
      (d) => d.attempt_count === 3 && d.status !== 'pending',
    );
    expect(okAfter).toMatchObject({ status: 'succeeded', next_attempt_at: null, next_trigger: 'scheduled' });
    expect(failedAfter).toMatchObject({
      status: 'failed',
      next_attempt_at: null,
      failed_scheduled_attempts: 2,
    });
    expect((await attemptsOf(storage(), okAfter.id)).map((a) => [a.status_code, a.trigger])).toEqual([
      [200, 'scheduled'],
      [500, 'manual'],
    ]);
  });
});
