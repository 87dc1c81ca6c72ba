import type { Attempt, Delivery } from '@scenario-scoring/api-types';
import { newId } from '../../common/ids.js';
import { AppError } from '../../errors/app-error.js';
import { newEvent } from '../../events/event-outbox.js';
import { idCursor, type Page, type PageRequest, toPage } from '../../storage/paging.js';
import {
  findDelivery,
  insertDirectDelivery,
  listAttemptRows,
  listDeliveryRows,
  queueManualAttempt,
} from './delivery-history-store.js';
import { requireWebhook, type WebhookServiceDeps } from './webhook-service.js';
import { toAttempt, toDelivery } from './webhook-views.js';

/** The message of every `webhook.test` event. */
export const TEST_EVENT_MESSAGE =
  'A test event from scenario-scoring: your endpoint received and can verify it.';

/** A page of a webhook's deliveries, newest first. */
export async function listDeliveries(
  deps: WebhookServiceDeps,
  tenantId: string,
  webhookId: string,
  page: PageRequest,
): Promise<Page<Delivery>> {
  await requireWebhook(deps.storage.db, tenantId, webhookId);
  return toPage(await listDeliveryRows(deps.storage.db, webhookId, page), page.limit, toDelivery, idCursor);
}

/** A page of a delivery's attempts, newest first. */
export async function listAttempts(
  deps: WebhookServiceDeps,
  tenantId: string,
  ids: { webhookId: string; deliveryId: string },
  page: PageRequest,
): Promise<Page<Attempt>> {
  await requireWebhook(deps.storage.db, tenantId, ids.webhookId);
  await requireDelivery(deps, ids);
  return toPage(
    await listAttemptRows(deps.storage.db, ids.deliveryId, page),
    page.limit,
    toAttempt,
    idCursor,
  );
}

/**
 * Sends a `webhook.test` event to one webhook: the event and its delivery, due now, commit together,
 * then this instance's delivery workers are woken.
 */
export async function sendTestEvent(
  deps: WebhookServiceDeps,
  tenantId: string,
  webhookId: string,
): Promise<Delivery> {
  const now = deps.clock.now();
  const row = await deps.storage.db.transaction().execute(async (trx) => {
    await requireWebhook(trx, tenantId, webhookId);
    const event = newEvent(
      tenantId,
      'webhook.test',
      { webhook_id: webhookId, message: TEST_EVENT_MESSAGE },
      now,
    );
    return insertDirectDelivery(trx, event, { id: newId('dlv'), webhookId });
  });
  deps.outbox.notify();
  return toDelivery(row);
}

/**
 * Queues a manual attempt of a delivery, due now, whatever its status (a failed or cancelled one too);
 * it carries the same event id, so the receiver can recognise an event it already processed.
 */
export async function redeliver(
  deps: WebhookServiceDeps,
  tenantId: string,
  ids: { webhookId: string; deliveryId: string },
): Promise<Delivery> {
  const at = deps.clock.now().toISOString();
  const row = await deps.storage.db.transaction().execute(async (trx) => {
    await requireWebhook(trx, tenantId, ids.webhookId);
    if (!(await findDelivery(trx, ids.webhookId, ids.deliveryId))) throw deliveryNotFound(ids);
    return queueManualAttempt(trx, ids.deliveryId, at);
  });
  deps.outbox.notify();
  return toDelivery(row);
}

async function requireDelivery(
  deps: WebhookServiceDeps,
  ids: { webhookId: string; deliveryId: string },
): Promise<void> {
  if (!(await findDelivery(deps.storage.db, ids.webhookId, ids.deliveryId))) throw deliveryNotFound(ids);
}

function deliveryNotFound(ids: { webhookId: string; deliveryId: string }): AppError {
  return new AppError('not_found', {
    detail: `No delivery ${ids.deliveryId} exists for webhook ${ids.webhookId}.`,
  });
}
