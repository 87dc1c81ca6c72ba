import type { Attempt, Delivery, EventType, Webhook } from '@scenario-scoring/api-types';
import type { Selectable } from 'kysely';
import type { DeliveriesTable, DeliveryAttemptsTable } from '../../storage/database.js';
import type { WebhookRow } from './webhook-store.js';

/** A webhook as the API shows it: never its secret. */
export function toWebhook(row: WebhookRow): Webhook {
  return {
    id: row.id,
    url: row.url,
    events: JSON.parse(row.events) as string[],
    description: row.description,
    status: row.status,
    disabled_reason: row.status === 'disabled' ? row.disabled_reason : null,
    created_at: row.created_at,
    updated_at: row.updated_at,
    max_deliveries_per_second: row.max_deliveries_per_second,
  };
}

/** A delivery as the API shows it. */
export function toDelivery(row: Selectable<DeliveriesTable>): Delivery {
  return {
    id: row.id,
    webhook_id: row.webhook_id,
    event_id: row.event_id,
    event_type: row.event_type as EventType,
    status: row.status,
    attempt_count: row.attempt_count,
    next_attempt_at: row.status === 'pending' ? row.next_attempt_at : null,
    last_attempt_at: row.last_attempt_at,
    created_at: row.created_at,
  };
}

/** An attempt as the API shows it. */
export function toAttempt(row: Selectable<DeliveryAttemptsTable>): Attempt {
  return {
    id: row.id,
    delivery_id: row.delivery_id,
    attempted_at: row.attempted_at,
    status_code: row.status_code,
    duration_ms: row.duration_ms,
    error: row.error,
    response_body: row.response_body,
    response_body_replaced: Number(row.response_body_replaced) === 1,
    response_body_truncated: Number(row.response_body_truncated) === 1,
    trigger: row.trigger,
  };
}
