import { sql } from 'kysely';
import { newId } from '../../common/ids.js';
import { DELIVERY_ROW_BYTES, UsageTally } from '../../quota/tenant-usage.js';
import { chunks } from '../../storage/chunks.js';
import { type RowInsert, rowInsertQuery } from '../../storage/row-insert.js';
import type { Storage } from '../../storage/storage.js';
import { tenantTurns } from '../../storage/tenant-turns.js';
import { fairShare } from '../../workers/fair-share.js';
import { webhookWants } from '../event-filter.js';
import { DEFAULT_MAX_DELIVERIES_PER_EVENT } from '../webhook-config.js';
import type { ClaimedDelivery } from './delivery-claims.js';

/** Events fanned out per transaction, at most. */
export const DISPATCH_BATCH = 500;
/**
 * Delivery rows one fan-out transaction writes, at most: an event's deliveries all in one transaction, so
 * one whose own are more (`WEBHOOK_MAX_FANOUT` above this) is fanned out alone. On SQLite a transaction
 * holds the one connection, every tenant's writes and reads wait behind it, and its inserts cost about
 * 10 µs a row: 500 events of a tenant with 48 webhooks were 24,000 rows, 270-630 ms (docs/benchmarks.md).
 */
export const DISPATCH_MAX_DELIVERIES = 1000;
/** Tenants with events waiting that one fan-out looks at, in turn from the one after the last served. */
export const DISPATCH_TENANTS = 32;
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

/**
 * What a fan-out did: the events dispatched, and the new deliveries claimed (secrets not loaded yet);
 * `more` when events may still wait (some were left for the next fan-out), and `after`, the tenant to
 * start the next one after (see dispatchEvents).
 */
export interface FanOut {
  dispatched: number;
  claimed: Omit<ClaimedDelivery, 'secrets'>[];
  more: boolean;
  after?: string;
}

/** An event waiting for its fan-out, as the fan-out reads it. */
interface WaitingEvent {
  id: string;
  tenant_id: string;
  type: string;
  created_at: string;
  payload: string;
  traceparent: string | null;
}

/**
 * Fans out undispatched events, up to `limit` of them and up to `maxDeliveries` new delivery rows (but at
 * least one event): for each, a pending delivery, due at once, for each of the tenant's active,
 * non-deleted webhooks that existed when the event was committed and whose filter takes its type (at most
 * `maxPerEvent`, the oldest first); then marks those events dispatched. One transaction, so an event is
 * fanned out exactly once and never in part: PostgreSQL instances take disjoint events with FOR UPDATE
 * SKIP LOCKED, SQLite has a single writer, and after a crash an event not marked is fanned out again
 * whole (the deliveries it already has are left alone, see DELIVERY_INSERT).
 *
 * Shared among tenants, not in one queue: it looks at up to DISPATCH_TENANTS tenants with events waiting,
 * in tenant id order from the one after `after` (the last it served, wrapping around), takes each one's
 * oldest events, and chooses them in turns (each tenant's first, then each one's second …), a tenant's
 * turns ending at its first event that the rows left cannot hold. So a tenant's backlog of escalations to
 * 48 webhooks does not keep another tenant's `run.completed` waiting behind it. With `claim`, up to
 * `claim.max` new deliveries are created already leased to that worker, shared among tenants as a claim
 * shares them (see `fairShare`).
 */
export async function dispatchEvents(
  storage: Pick<Storage, 'db' | 'kind'>,
  now: Date,
  options: {
    limit?: number;
    maxDeliveries?: number;
    after?: string;
    claim?: FanOutClaim;
    maxPerEvent?: number;
  } = {},
): Promise<FanOut> {
  const maxPerEvent = options.maxPerEvent ?? DEFAULT_MAX_DELIVERIES_PER_EVENT;
  const limit = options.limit ?? DISPATCH_BATCH;
  const maxDeliveries = options.maxDeliveries ?? DISPATCH_MAX_DELIVERIES;
  const nowIso = now.toISOString();
  const { claim } = options;
  // Which tenants have events waiting: a hint read before the transaction (their events are read in it).
  const tenants = (await tenantsWaiting(storage, options.after ?? '')).slice(0, DISPATCH_TENANTS);
  if (tenants.length === 0) return { dispatched: 0, claimed: [], more: false };
  return storage.db.transaction().execute(async (trx) => {
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
    const targets = (event: WaitingEvent) =>
      (byTenant.get(event.tenant_id) ?? [])
        // An event committed before the webhook existed is not the webhook's to receive.
        .filter(
          (webhook) => webhook.created_at <= event.created_at && webhookWants(webhook.filter, event.type),
        )
        // A cap on what one event may cause: the oldest webhooks first (ids sort by creation).
        .slice(0, maxPerEvent);

    // Each tenant's oldest events, as many as its share of `limit`, and no more than the rows can take
    // if each fanned out to every webhook of the tenant (so a tenant with 48 is read 20 events at a time).
    const share = Math.ceil(limit / tenants.length);
    const quotas = tenants.map((tenant) => {
      const most = Math.min(maxPerEvent, byTenant.get(tenant)?.length ?? 0);
      return most === 0 ? share : Math.max(1, Math.min(share, Math.floor(maxDeliveries / most)));
    });
    const waiting = await oldestWaiting(storage.kind, tenants, quotas).execute(trx);
    const queues = new Map<string, WaitingEvent[]>(tenants.map((tenant) => [tenant, []]));
    for (const event of waiting.rows) queues.get(event.tenant_id)?.push(event);
    for (const queue of queues.values()) queue.sort((a, b) => (a.id < b.id ? -1 : 1));

    // In turns: each tenant's first, then each one's second …; a tenant's turns end at its first event
    // whose deliveries the rows left cannot hold (the first event chosen always fits).
    const chosen: { event: WaitingEvent; webhooks: ReturnType<typeof targets> }[] = [];
    const ended = new Set<string>();
    let rowCount = 0;
    for (let turn = 0, going = true; going && chosen.length < limit; turn++) {
      going = false;
      for (const tenant of tenants) {
        const event = ended.has(tenant) ? undefined : queues.get(tenant)?.[turn];
        if (event === undefined) continue;
        going = true;
        const eventWebhooks = targets(event);
        if (chosen.length > 0 && rowCount + eventWebhooks.length > maxDeliveries) {
          ended.add(tenant);
          continue;
        }
        chosen.push({ event, webhooks: eventWebhooks });
        rowCount += eventWebhooks.length;
        if (chosen.length === limit) break;
      }
    }
    // None read: dispatched meanwhile, or (PostgreSQL) locked by another instance's fan-out, whose they are.
    if (chosen.length === 0) return { dispatched: 0, claimed: [], more: false };
    // Some may be left: events read and not chosen, a tenant with as many read as asked, tenants not walked.
    const more =
      chosen.length < waiting.rows.length ||
      tenants.length === DISPATCH_TENANTS ||
      tenants.some((tenant, n) => queues.get(tenant)?.length === quotas[n]);
    const events = chosen.map(({ event }) => event);

    const fanned = chosen.flatMap(({ event, webhooks: eventWebhooks }) =>
      eventWebhooks.map((webhook) => ({ event, webhook, id: newId('dlv') })),
    );
    const leasedIndexes = claim
      ? fairShare(
          fanned.map(({ event }) => event.tenant_id),
          { ...claim, tenantCap: claim.tenantCap ?? claim.max },
        )
      : [];
    const leased = new Set(leasedIndexes);
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
    const claimed = leasedIndexes
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
    const last = events.at(-1) as WaitingEvent;
    return { dispatched: events.length, claimed, more, after: last.tenant_id };
  });
}

/**
 * The tenants with events waiting for their fan-out, in tenant id order from the first after `after`, then
 * from the first up to `after` (DISPATCH_TENANTS each way): an index probe of
 * `events_tenant_undispatched_idx` (migration 0026) each, as run claims walk tenants (run-claims.ts).
 */
async function tenantsWaiting(storage: Pick<Storage, 'db' | 'kind'>, after: string): Promise<string[]> {
  const turns = tenantTurns({
    table: 'events',
    having: sql`u.dispatched_at is null`,
    cursor: after,
    walk: DISPATCH_TENANTS,
    postgres: storage.kind === 'postgres',
  });
  const { rows } = await sql<{ tenant_id: string }>`
    with recursive ${turns}
    select tenant_id from walked order by turn`.execute(storage.db);
  return rows.map((row) => row.tenant_id);
}

/**
 * The oldest `quotas[n]` waiting events of each of `tenants`. SQLite: a walk of each tenant's events in
 * `events_tenant_undispatched_idx`, an index probe an event (its LIMIT cannot vary by tenant). PostgreSQL:
 * each tenant's as a range of tenant ids (the index, whatever its statistics say; see claimStatement),
 * locked FOR UPDATE SKIP LOCKED, so instances take disjoint events and one never waits for another.
 */
function oldestWaiting(kind: Storage['kind'], tenants: readonly string[], quotas: readonly number[]) {
  const columns = sql.raw('e.id, e.tenant_id, e.type, e.created_at, e.payload, e.traceparent');
  if (kind === 'postgres')
    return sql<WaitingEvent>`
      select c.* from unnest(${[...tenants]}::text[], ${[...quotas]}::integer[]) as t(tenant_id, quota)
      cross join lateral (
        select ${columns} from events as e
        where e.tenant_id >= t.tenant_id and e.tenant_id <= t.tenant_id and e.dispatched_at is null
        order by e.tenant_id, e.id limit t.quota
        for update of e skip locked
      ) as c`;
  const wanted = JSON.stringify(tenants.map((tenant, n) => [tenant, quotas[n]]));
  return sql<WaitingEvent>`
    with recursive picks(tenant_id, quota, id, n) as (
      select json_extract(t.value, '$[0]'), json_extract(t.value, '$[1]'),
        (select min(x.id) from events as x
         where x.tenant_id = json_extract(t.value, '$[0]') and x.dispatched_at is null), 1
      from json_each(${wanted}) as t
      union all
      select p.tenant_id, p.quota,
        (select min(x.id) from events as x
         where x.tenant_id = p.tenant_id and x.dispatched_at is null and x.id > p.id), p.n + 1
      from picks as p where p.id is not null and p.n < p.quota
    )
    select ${columns} from picks as p join events as e on e.id = p.id`;
}
