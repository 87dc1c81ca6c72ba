import type { Kysely, Selectable, Transaction } from 'kysely';
import type { OutboxEvent } from '../../events/event-outbox.js';
import { insertEvents } from '../../events/event-outbox.js';
import { DELIVERY_ROW_BYTES, rowBytes, usageUpserts } from '../../quota/tenant-usage.js';
import type { Database, DeliveriesTable, DeliveryAttemptsTable } from '../../storage/database.js';
import { keysetPage, type PageRequest } from '../../storage/paging.js';

type Db = Kysely<Database> | Transaction<Database>;

/** A delivery row as stored. */
export type DeliveryRow = Selectable<DeliveriesTable>;
/** An attempt row as stored. */
export type AttemptRow = Selectable<DeliveryAttemptsTable>;

/** The delivery `id` of webhook `webhookId` (whose tenant the caller already checked). */
export function findDelivery(db: Db, webhookId: string, id: string): Promise<DeliveryRow | undefined> {
  return db
    .selectFrom('deliveries')
    .selectAll()
    .where('id', '=', id)
    .where('webhook_id', '=', webhookId)
    .executeTakeFirst();
}

/** One page of a webhook's deliveries, newest first, plus one row when another page follows. */
export function listDeliveryRows(db: Db, webhookId: string, page: PageRequest): Promise<DeliveryRow[]> {
  return keysetPage(
    db.selectFrom('deliveries').selectAll().where('webhook_id', '=', webhookId),
    page,
  ).execute();
}

/** One page of a delivery's attempts, newest first, plus one row when another page follows. */
export function listAttemptRows(db: Db, deliveryId: string, page: PageRequest): Promise<AttemptRow[]> {
  return keysetPage(
    db.selectFrom('delivery_attempts').selectAll().where('delivery_id', '=', deliveryId),
    page,
  ).execute();
}

/**
 * Writes an event already fanned out to one webhook: the event (dispatched, so the dispatcher does not
 * fan it out to the tenant's other webhooks) and its delivery, due now.
 */
export async function insertDirectDelivery(
  trx: Transaction<Database>,
  event: OutboxEvent,
  delivery: { id: string; webhookId: string },
): Promise<DeliveryRow> {
  const now = event.createdAt.toISOString();
  await insertEvents(trx, [event], { dispatchedAt: now });
  const row: DeliveryRow = {
    id: delivery.id,
    tenant_id: event.tenantId,
    webhook_id: delivery.webhookId,
    event_id: event.id,
    event_type: event.type,
    status: 'pending',
    attempt_count: 0,
    failed_scheduled_attempts: 0,
    next_attempt_at: now,
    next_trigger: 'scheduled',
    last_attempt_at: null,
    locked_until: null,
    locked_by: null,
    created_at: now,
    updated_at: now,
  };
  await trx.insertInto('deliveries').values(row).execute();
  // The event and the delivery count in their tenant's storage, as a fan-out's (event-dispatcher.ts).
  const bytes = rowBytes(event.payload) + DELIVERY_ROW_BYTES;
  for (const query of usageUpserts(trx, event.tenantId, bytes, event.createdAt))
    await trx.executeQuery(query);
  return row;
}

/**
 * Queues a manual attempt of a delivery, now, whatever its status; returns it as it now is. Any claim is
 * released, so the manual attempt is not overwritten by the outcome of an attempt already in flight (whose
 * write is fenced off by the claim it no longer holds).
 */
export function queueManualAttempt(
  trx: Transaction<Database>,
  id: string,
  now: string,
): Promise<DeliveryRow> {
  return trx
    .updateTable('deliveries')
    .set({
      status: 'pending',
      next_attempt_at: now,
      next_trigger: 'manual',
      locked_until: null,
      locked_by: null,
      updated_at: now,
    })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}
