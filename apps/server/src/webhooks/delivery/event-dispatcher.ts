import { newId } from '../../common/ids.js';
import { DELIVERY_ROW_BYTES, UsageTally } from '../../quota/tenant-usage.js';
import { chunks } from '../../storage/chunks.js';
import { type RowInsert, rowInsertQuery } from '../../storage/row-insert.js';
import type { Storage } from '../../storage/storage.js';
import { fairShare } from '../../workers/fair-share.js';
import { webhookWants } from '../event-filter.js';
import { DEFAULT_MAX_DELIVERIES_PER_EVENT } from '../webhook-config.js';
import type { ClaimedDelivery } from './delivery-claims.js';

/** Events fanned out per transaction. */
export const DISPATCH_BATCH = 500;
/** Delivery rows per INSERT, well below both dialects' bound-parameter limits. */
const DELIVERIES_PER_STATEMENT = 500;

/** A new delivery's row; the lease only on those the fan-out claims. */
interface NewDeliveryRow {
  id: string;
  tenant_id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  status: 'pending';
  next_attempt_at: string;
  created_at: string;
  updated_at: string;
  locked_until?: string;
  locked_by?: string;
}

/**
 * The deliveries' INSERT, its text made once per row count (see rowInsertQuery): no query tree of 5,000
 * value nodes built and compiled for each batch of 500 events. A delivery already there (an event fanned
 * out again after a crash) is left alone, and only the inserted ones are returned.
 */
const DELIVERY_INSERT: RowInsert<NewDeliveryRow> = {
  table: 'deliveries',
  columns: [
    'id',
    'tenant_id',
    'webhook_id',
    'event_id',
    'event_type',
    'status',
    'next_attempt_at',
    'created_at',
    'updated_at',
    'locked_until',
    'locked_by',
  ],
  onConflictDoNothing: ['webhook_id', 'event_id'],
  returning: ['id'],
};

/** A worker taking the first deliveries of a fan-out for itself, as a claim would, saving a round of claims. */
export interface FanOutClaim {
  workerId: string;
  /** The lease: `now + leaseMs`. */
  lockedUntil: string;
  /** How many of the new deliveries to claim (the worker's free slots). */
  max: number;
  /** The most deliveries the worker may hold for one tenant (default: `max`, no other bound). */
  tenantCap?: number;
  /** The deliveries the worker holds already, by tenant. */
  held?: ReadonlyMap<string, number>;
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
 * up to `claim.max` new deliveries are created already leased to that worker, shared among tenants as a
 * claim shares them (see `fairShare`).
 */
export async function dispatchEvents(
  storage: Pick<Storage, 'db' | 'kind'>,
  now: Date,
  options: { limit?: number; claim?: FanOutClaim; maxPerEvent?: number } = {},
): Promise<FanOut> {
  const maxPerEvent = options.maxPerEvent ?? DEFAULT_MAX_DELIVERIES_PER_EVENT;
  const nowIso = now.toISOString();
  const { claim } = options;
  return storage.db.transaction().execute(async (trx) => {
    const events = await trx
      .selectFrom('events')
      .select(['id', 'tenant_id', 'type', 'created_at', 'payload', 'traceparent'])
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
      .orderBy('id')
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
        // A cap on what one event may cause: the oldest webhooks first (ids sort by creation).
        .slice(0, maxPerEvent)
        .map((webhook) => ({ event, webhook, id: newId('dlv') })),
    );
    const chosen = claim
      ? fairShare(
          fanned.map(({ event }) => event.tenant_id),
          { ...claim, tenantCap: claim.tenantCap ?? claim.max },
        )
      : [];
    const leased = new Set(chosen);
    const inserted = new Set<string>();
    const rows = fanned.map(
      ({ event, webhook, id }, n): NewDeliveryRow => ({
        id,
        tenant_id: event.tenant_id,
        webhook_id: webhook.id,
        event_id: event.id,
        event_type: event.type,
        status: 'pending' as const,
        next_attempt_at: nowIso,
        created_at: nowIso,
        updated_at: nowIso,
        ...(claim && leased.has(n) && { locked_until: claim.lockedUntil, locked_by: claim.workerId }),
      }),
    );
    for (const chunk of chunks(rows, DELIVERIES_PER_STATEMENT)) {
      const done = await trx.executeQuery<{ id: string }>(rowInsertQuery(trx, DELIVERY_INSERT, chunk));
      for (const row of done.rows) inserted.add(row.id);
    }
    // The deliveries count in their tenants' storage (the quota), in the transaction that made them.
    const usage = new UsageTally();
    for (const row of rows) if (inserted.has(row.id)) usage.add(row.tenant_id, DELIVERY_ROW_BYTES);
    for (const query of usage.upserts(trx, now)) await trx.executeQuery(query);
    await trx
      .updateTable('events')
      .set({ dispatched_at: nowIso })
      .where(
        'id',
        'in',
        events.map((event) => event.id),
      )
      .execute();
    const claimed = chosen
      .map((n) => fanned[n] as (typeof fanned)[number])
      .filter(({ id }) => inserted.has(id))
      .map(({ event, webhook, id }) => ({
        id,
        tenantId: event.tenant_id,
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
        ...(event.traceparent && { traceparent: event.traceparent }),
      }));
    return { dispatched: events.length, claimed };
  });
}
