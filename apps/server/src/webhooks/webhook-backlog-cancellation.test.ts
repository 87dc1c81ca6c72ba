import { randomBytes } from 'node:crypto';
import { waitUntil } from '@scenario-scoring/testkit';
import { expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import {
  commitTestEvents,
  createTestWebhook,
  deliveryStatuses,
  testWebhookConfig,
} from '../../test/support/test-webhooks.js';
import { systemClock } from '../common/clock.js';
import type { Storage } from '../storage/storage.js';
import { deleteWebhook, updateWebhook, type WebhookServiceDeps } from './api/webhook-service.js';
import { attemptDelivery } from './delivery/delivery-attempt.js';
import { claimDueDeliveries } from './delivery/delivery-claims.js';
import { recordDeliveryWrites } from './delivery/delivery-recorder.js';
import { dispatchEvents } from './delivery/event-dispatcher.js';
import { SecretBox } from './outbound/secret-box.js';
import { CANCEL_BATCH, cancelPendingDeliveries } from './webhook-registry.js';

const secretBox = new SecretBox(randomBytes(32));
const BACKLOG = 2 * CANCEL_BATCH + 17;

/**
 * Deleting or disabling a webhook with a large backlog cancels it in bounded batches, a short transaction
 * each (on SQLite the one write connection is shared by every tenant), and no delivery of it is attempted
 * after the answer, even those the background cancellation has not reached (a claim cancels them).
 */
forEachDatabase('cancelling a deleted or disabled webhook’s backlog', ({ storage }) => {
  const deps = (): WebhookServiceDeps =>
    ({
      storage: storage(),
      outbox: { notify: () => undefined },
      retired: { notify: () => undefined },
      policy: { allowedCidrs: ['127.0.0.1/32'] },
      secretBox,
      clock: systemClock,
      keyedHash: { hash: () => '' },
    }) as unknown as WebhookServiceDeps;

  /** A webhook with BACKLOG pending deliveries due now (one of them of a real event, to claim). */
  const withBacklog = async (tenantId: string) => {
    const webhook = await createTestWebhook(storage(), secretBox, {
      tenantId,
      url: 'http://127.0.0.1:9/hook',
      now: new Date(Date.now() - 1000),
    });
    await commitTestEvents(storage(), tenantId, { count: BACKLOG, now: new Date(Date.now() - 500) });
    while ((await dispatchEvents(storage(), new Date())).dispatched > 0);
    return webhook;
  };
  const statuses = (webhookId: string) => deliveryStatuses(storage(), webhookId);

  it('cancels at most a batch per statement, and only while the webhook is deleted or disabled', async () => {
    const webhook = await withBacklog('backlog-batch');
    // Still active: nothing is cancelled.
    expect(
      (await cancelPendingDeliveries(storage().db, webhook.id, new Date().toISOString())).cancelled,
    ).toBe(0);
    await storage()
      .db.updateTable('webhooks')
      .set({ status: 'disabled' })
      .where('id', '=', webhook.id)
      .execute();
    const first = await cancelPendingDeliveries(storage().db, webhook.id, new Date().toISOString());
    expect(first.cancelled).toBeLessThanOrEqual(CANCEL_BATCH);
    expect(first.next).toBeDefined();
    expect(await statuses(webhook.id)).toEqual({
      cancelled: first.cancelled,
      pending: BACKLOG - first.cancelled,
    });
    let next = first.next;
    while (next !== undefined)
      next = (await cancelPendingDeliveries(storage().db, webhook.id, new Date().toISOString(), next)).next;
    expect(await statuses(webhook.id)).toEqual({ cancelled: BACKLOG });
  });

  it('after DELETE answers, claims cancel what is left instead of attempting it, and the rest follows', async () => {
    const webhook = await withBacklog('backlog-delete');
    await deleteWebhook(deps(), 'backlog-delete', webhook.id);
    const claimed = await claimDueDeliveries(storage(), secretBox, {
      workerId: 'backlog-worker',
      now: new Date(),
      leaseMs: 60_000,
      limit: 100,
    });
    expect(claimed.filter((delivery) => delivery.webhookId === webhook.id && delivery.webhookActive)).toEqual(
      [],
    );
    await waitUntil(
      async () => (await statuses(webhook.id)).pending === undefined,
      20_000,
      'the backlog cancelled in the background',
    );
    expect(await statuses(webhook.id)).toEqual({ cancelled: BACKLOG });
  });

  it('re-enabling a webhook whose disabling left a backlog cancels that backlog first', async () => {
    const webhook = await withBacklog('backlog-reenable');
    // As if the process stopped right after the disabling's own transaction (its first batch only).
    await storage()
      .db.updateTable('webhooks')
      .set({ status: 'disabled', disabled_reason: 'manual' })
      .where('id', '=', webhook.id)
      .execute();
    const first = await cancelPendingDeliveries(storage().db, webhook.id, new Date().toISOString());
    expect((await statuses(webhook.id)).pending).toBe(BACKLOG - first.cancelled);
    const enabled = await updateWebhook(deps(), 'backlog-reenable', webhook.id, { status: 'active' });
    expect(enabled.status).toBe('active');
    expect(await statuses(webhook.id)).toEqual({ cancelled: BACKLOG });
  });

  it('PATCH disabled answers after one batch; the backlog is then cancelled in the background', async () => {
    const webhook = await withBacklog('backlog-disable');
    await updateWebhook(deps(), 'backlog-disable', webhook.id, { status: 'disabled' });
    await waitUntil(
      async () => (await statuses(webhook.id)).pending === undefined,
      20_000,
      'the backlog cancelled in the background',
    );
    expect(await statuses(webhook.id)).toEqual({ cancelled: BACKLOG });
  });

  it('a webhook the recorder disables is told once the batch committed; a failed background cancellation is logged', async () => {
    const webhook = await withBacklog('backlog-gone');
    const [claimed] = (
      await claimDueDeliveries(storage(), secretBox, {
        workerId: 'gone-worker',
        now: new Date(),
        leaseMs: 60_000,
        limit: 100,
      })
    ).filter((delivery) => delivery.webhookId === webhook.id);
    if (claimed === undefined) throw new Error('no delivery of the webhook claimed');
    const { write } = await attemptDelivery(claimed, {
      send: async () => ({ statusCode: 410, error: 'HTTP 410', durationMs: 5, responseBody: null }),
      clock: systemClock,
      config: testWebhookConfig(),
    });
    // The batch's transaction runs on the database; the background cancellation after it finds it gone.
    let uses = 0;
    const gone = {
      selectFrom: () => {
        throw new Error('the database is gone');
      },
    };
    const failingAfterTheBatch = {
      get db() {
        return uses++ === 0 ? storage().db : gone;
      },
    } as unknown as Pick<Storage, 'db'>;
    const told: string[][] = [];
    const logged: { message: string; fields: unknown }[] = [];
    await recordDeliveryWrites(failingAfterTheBatch, [write], {
      workerId: 'gone-worker',
      now: new Date(),
      disableAfterFailingMs: 60_000,
      onDisabled: (webhookIds) => {
        told.push([...webhookIds]);
      },
      logger: { error: (message, fields) => logged.push({ message, fields }) },
    });
    expect(told).toEqual([[webhook.id]]);
    await waitUntil(() => logged.length === 1, 10_000, 'the failure logged');
    expect(logged[0]).toMatchObject({
      message: 'could not cancel the pending deliveries of a disabled webhook',
      fields: { webhookId: webhook.id, error: { message: 'the database is gone' } },
    });
    // What it left pending is cancelled by the next claim (or when the webhook is re-enabled).
    expect((await statuses(webhook.id)).pending).toBeGreaterThan(0);
  });
});
