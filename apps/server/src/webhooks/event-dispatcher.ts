import { newId } from '../ids.js';
import type { Storage } from '../storage/storage.js';

/** Events fanned out per transaction. */
export const DISPATCH_BATCH = 500;
/** Delivery rows per INSERT, well below both dialects' bound-parameter limits. */
const DELIVERIES_PER_STATEMENT = 500;

/** Whether a webhook's `events` filter (a JSON array, `["*"]` for all) takes events of `type`. */
export function webhookWants(filter: readonly string[], type: string): boolean {
  return filter.includes('*') || filter.includes(type);
}

/**
 * Fans out up to `limit` undispatched events: a pending delivery, due at once, for each of the tenant's
 * active, non-deleted webhooks that existed when the event was committed and whose filter takes its type;
 * then marks the events dispatched. One transaction, so an event is fanned out exactly once: PostgreSQL
 * instances claim disjoint events with FOR UPDATE SKIP LOCKED, SQLite has a single writer. Returns the
 * number of events dispatched.
 */
export async function dispatchEvents(
  storage: Pick<Storage, 'db' | 'kind'>,
  now: Date,
  limit = DISPATCH_BATCH,
): Promise<number> {
  const nowIso = now.toISOString();
  return storage.db.transaction().execute(async (trx) => {
    const events = await trx
      .selectFrom('events')
      .select(['id', 'tenant_id', 'type', 'created_at'])
      .where('dispatched_at', 'is', null)
      .orderBy('id')
      .limit(limit)
      .$if(storage.kind === 'postgres', (query) => query.forUpdate().skipLocked())
      .execute();
    if (events.length === 0) return 0;

    const tenants = [...new Set(events.map((event) => event.tenant_id))];
    const webhooks = await trx
      .selectFrom('webhooks')
      .select(['id', 'tenant_id', 'events', 'created_at'])
      .where('tenant_id', 'in', tenants)
      .where('status', '=', 'active')
      .where('deleted_at', 'is', null)
      .execute();
    const byTenant = new Map<string, { id: string; created_at: string; filter: string[] }[]>();
    for (const webhook of webhooks) {
      const list = byTenant.get(webhook.tenant_id) ?? [];
      list.push({ ...webhook, filter: JSON.parse(webhook.events) as string[] });
      byTenant.set(webhook.tenant_id, list);
    }

    const deliveries = events.flatMap((event) =>
      (byTenant.get(event.tenant_id) ?? [])
        // An event committed before the webhook existed is not the webhook's to receive.
        .filter(
          (webhook) => webhook.created_at <= event.created_at && webhookWants(webhook.filter, event.type),
        )
        .map((webhook) => ({
          id: newId('dlv'),
          tenant_id: event.tenant_id,
          webhook_id: webhook.id,
          event_id: event.id,
          event_type: event.type,
          status: 'pending' as const,
          next_attempt_at: nowIso,
          created_at: nowIso,
          updated_at: nowIso,
        })),
    );
    for (let start = 0; start < deliveries.length; start += DELIVERIES_PER_STATEMENT) {
      await trx
        .insertInto('deliveries')
        .values(deliveries.slice(start, start + DELIVERIES_PER_STATEMENT))
        .onConflict((conflict) => conflict.columns(['webhook_id', 'event_id']).doNothing())
        .execute();
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
    return events.length;
  });
}
