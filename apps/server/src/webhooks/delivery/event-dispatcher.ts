import { newId } from '../../ids.js';
import { chunks } from '../../storage/chunks.js';
import type { Storage } from '../../storage/storage.js';
import { webhookWants } from '../api/event-filter.js';
import type { ClaimedDelivery } from './delivery-claims.js';

/** Events fanned out per transaction. */
export const DISPATCH_BATCH = 500;
/** Delivery rows per INSERT, well below both dialects' bound-parameter limits. */
const DELIVERIES_PER_STATEMENT = 500;

/** A worker taking the first deliveries of a fan-out for itself, as a claim would, saving a round of claims. */
export interface FanOutClaim {
  workerId: string;
  /** The lease: `now + leaseMs`. */
  lockedUntil: string;
  /** How many of the new deliveries to claim (the worker's free slots). */
  max: number;
}

/** What a fan-out did: the events dispatched, and the new deliveries claimed (secrets not loaded yet). */
export interface FanOut {
  dispatched: number;
  claimed: Omit<ClaimedDelivery, 'secrets'>[];
}

/**
 * Fans out up to `limit` undispatched events: a pending delivery, due at once, for each of the tenant's
 * active, non-deleted webhooks that existed when the event was committed and whose filter takes its type;
 * then marks the events dispatched. One transaction, so an event is fanned out exactly once: PostgreSQL
 * instances claim disjoint events with FOR UPDATE SKIP LOCKED, SQLite has a single writer. With `claim`,
 * the first `claim.max` new deliveries are created already leased to that worker.
 */
export async function dispatchEvents(
  storage: Pick<Storage, 'db' | 'kind'>,
  now: Date,
  options: { limit?: number; claim?: FanOutClaim } = {},
): Promise<FanOut> {
  const nowIso = now.toISOString();
  const { claim } = options;
  return storage.db.transaction().execute(async (trx) => {
    const events = await trx
      .selectFrom('events')
      .select(['id', 'tenant_id', 'type', 'created_at', 'payload'])
      .where('dispatched_at', 'is', null)
      .orderBy('id')
      .limit(options.limit ?? DISPATCH_BATCH)
      .$if(storage.kind === 'postgres', (query) => query.forUpdate().skipLocked())
      .execute();
    if (events.length === 0) return { dispatched: 0, claimed: [] };

    const tenants = [...new Set(events.map((event) => event.tenant_id))];
    const webhooks = await trx
      .selectFrom('webhooks')
      .select(['id', 'tenant_id', 'url', 'events', 'created_at'])
      .where('tenant_id', 'in', tenants)
      .where('status', '=', 'active')
      .where('deleted_at', 'is', null)
      .execute();
    // Each filter parsed once, not once per event.
    const byTenant = new Map<string, ((typeof webhooks)[number] & { filter: string[] })[]>();
    for (const webhook of webhooks) {
      const tenantWebhooks = byTenant.get(webhook.tenant_id) ?? [];
      tenantWebhooks.push({ ...webhook, filter: JSON.parse(webhook.events) as string[] });
      byTenant.set(webhook.tenant_id, tenantWebhooks);
    }

    const fanned = events.flatMap((event) =>
      (byTenant.get(event.tenant_id) ?? [])
        // An event committed before the webhook existed is not the webhook's to receive.
        .filter(
          (webhook) => webhook.created_at <= event.created_at && webhookWants(webhook.filter, event.type),
        )
        .map((webhook) => ({ event, webhook, id: newId('dlv') })),
    );
    const claimCount = Math.min(claim?.max ?? 0, fanned.length);
    const inserted = new Set<string>();
    const rows = fanned.map(({ event, webhook, id }, n) => ({
      id,
      tenant_id: event.tenant_id,
      webhook_id: webhook.id,
      event_id: event.id,
      event_type: event.type,
      status: 'pending' as const,
      next_attempt_at: nowIso,
      created_at: nowIso,
      updated_at: nowIso,
      ...(claim && n < claimCount && { locked_until: claim.lockedUntil, locked_by: claim.workerId }),
    }));
    for (const chunk of chunks(rows, DELIVERIES_PER_STATEMENT)) {
      const done = await trx
        .insertInto('deliveries')
        .values(chunk)
        .onConflict((conflict) => conflict.columns(['webhook_id', 'event_id']).doNothing())
        .returning('id')
        .execute();
      for (const row of done) inserted.add(row.id);
    }
    await trx
      .updateTable('events')
      .set({ dispatched_at: nowIso })
      .where(
        'id',
        'in',
        events.map((event) => event.id),
      )
      .execute();
    const claimed = fanned
      .slice(0, claimCount)
      .filter(({ id }) => inserted.has(id))
      .map(({ event, webhook, id }) => ({
        id,
        webhookId: webhook.id,
        eventId: event.id,
        lockedUntil: claim?.lockedUntil as string,
        failedScheduledAttempts: 0,
        trigger: 'scheduled' as const,
        succeededBefore: false,
        dueAt: event.created_at,
        url: webhook.url,
        webhookActive: true,
        payload: event.payload,
      }));
    return { dispatched: events.length, claimed };
  });
}
