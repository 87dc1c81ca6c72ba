import { type RawBuilder, sql } from 'kysely';
import { isErasedEventPayload } from '../../events/event-outbox.js';
import { leaseWrite, type Storage } from '../../storage/storage.js';
import { fairShare } from '../../workers/fair-share.js';
import type { SecretBox } from '../outbound/secret-box.js';
import { loadSigningSecrets, openEach } from '../webhook-registry.js';

/** A delivery this worker holds a lease on, with what its attempt needs. */
export interface ClaimedDelivery {
  id: string;
  tenantId: string;
  webhookId: string;
  eventId: string;
  /** The lease this claim set: with the worker id, it fences the claim's writes. */
  lockedUntil: string;
  failedScheduledAttempts: number;
  trigger: 'scheduled' | 'manual';
  /** For a manual attempt: an earlier attempt succeeded (the delivery was `succeeded` before). */
  succeededBefore: boolean;
  /** When the attempt came due (its event's time, or its retry's): the start of the delivery lag. */
  dueAt: string;
  url: string;
  /** False when the webhook was disabled or deleted: the delivery is cancelled, not attempted. */
  webhookActive: boolean;
  payload: string;
  /** The W3C traceparent of the request that raised the event, when it was traced. */
  traceparent?: string | undefined;
  /** The signing secrets, current first; empty when the webhook is not active. */
  secrets: string[];
}

/** A claimed delivery's row, with its webhook and event as the attempt needs them. */
interface ClaimedRow {
  id: string;
  tenant_id: string;
  webhook_id: string;
  event_id: string;
  failed_scheduled_attempts: number;
  next_trigger: 'scheduled' | 'manual';
  next_attempt_at: string | null;
  /** The webhook's and the event's: null if missing (the delivery is then cancelled, not attempted). */
  url: string | null;
  webhook_status: string | null;
  webhook_deleted_at: string | null;
  payload: string | null;
  traceparent?: string | null;
  /** 1/0 on SQLite, true/false on PostgreSQL. */
  succeeded_before: unknown;
  /** The sealed secrets valid at the claim's time, current first: json (text on SQLite); null if none. */
  secrets: string | string[] | null;
}

type ClaimOptions = {
  workerId: string;
  now: Date;
  leaseMs: number;
  limit: number;
  /** The most deliveries the worker may hold for one tenant (default: `limit`, no other bound). */
  tenantCap?: number;
  /** The deliveries the worker holds already (in flight or waiting for a slot), by tenant. */
  held?: ReadonlyMap<string, number>;
};

/**
 * Claims up to `limit` due deliveries for `workerId` with a lease until `now + leaseMs`: pending, due, and
 * not leased by a live worker; then loads each one's webhook, event payload and valid secrets.
 *
 * Shared fairly among tenants: the claim walks the tenants with pending deliveries (an index probe each,
 * deliveries_tenant_due_idx) and takes each one's most overdue; a tenant's k-th ranks at k plus what the
 * worker already holds for it, lowest first, then the most overdue; and no tenant gets more than
 * `tenantCap` less what it holds. So a tenant whose receiver hangs, or whose backlog is large and old,
 * holds at most `tenantCap` of the worker's slots, and another tenant's delivery is found in the next
 * claim, not behind that backlog. The walk costs about a microsecond or two per tenant with pending
 * deliveries (retries included).
 *
 * On PostgreSQL all of it is one round trip, the function claim_due_deliveries (migration 0007): the
 * chosen rows are locked with FOR UPDATE SKIP LOCKED, so concurrent instances claim disjoint sets without
 * waiting on each other. SQLite has a single writer. Either way the lease is written without a disk flush
 * of its own (see leaseWrite): a lease lost to a power failure only makes the delivery claimable
 * again.
 */
export async function claimDueDeliveries(
  storage: Pick<Storage, 'db' | 'kind' | 'transact'>,
  secretBox: SecretBox,
  options: ClaimOptions,
): Promise<ClaimedDelivery[]> {
  const nowIso = options.now.toISOString();
  const lockedUntil = new Date(options.now.getTime() + options.leaseMs).toISOString();
  const fairness: Fairness = {
    tenantCap: options.tenantCap ?? options.limit,
    heldJson: JSON.stringify(Object.fromEntries(options.held ?? [])),
  };
  const rows =
    storage.kind === 'postgres'
      ? (
          await sql<ClaimedRow>`
            select * from claim_due_deliveries(${options.workerId}, ${nowIso}, ${lockedUntil}, ${options.limit},
              ${fairness.tenantCap}, ${fairness.heldJson}::json)
          `.execute(storage.db)
        ).rows
      : await claimOnSqlite(storage, options, fairness, nowIso, lockedUntil);
  const opened = new Map<string, string | undefined>();
  return inClaimOrder(rows, nowIso, options.held).map((row) => {
    const delivery = claimedDelivery(row, lockedUntil, nowIso);
    // PostgreSQL answers the json as an array, SQLite as its text.
    const sealed: string[] = typeof row.secrets === 'string' ? JSON.parse(row.secrets) : (row.secrets ?? []);
    return { ...delivery, secrets: delivery.webhookActive ? openEach(secretBox, sealed, opened) : [] };
  });
}

/**
 * In the claim's order (RETURNING keeps none), which the worker starts them in: a tenant's k-th most
 * overdue at k plus what the worker holds for it, lowest first, then the most overdue (ISO times sort as
 * text; a row without a due time counts as due now).
 */
function inClaimOrder<Row extends ClaimedRow>(
  rows: Row[],
  nowIso: string,
  held: ReadonlyMap<string, number> | undefined,
): Row[] {
  const dueAt = (row: ClaimedRow) => row.next_attempt_at ?? nowIso;
  rows.sort((a, b) => (dueAt(a) < dueAt(b) ? -1 : dueAt(a) > dueAt(b) ? 1 : 0));
  // Every row: the claim kept each tenant within its cap already.
  const order = fairShare(
    rows.map((row) => row.tenant_id),
    { max: rows.length, tenantCap: Number.POSITIVE_INFINITY, held },
  );
  return order.map((n) => rows[n] as Row);
}

function claimedDelivery(
  row: ClaimedRow,
  lockedUntil: string,
  nowIso: string,
): Omit<ClaimedDelivery, 'secrets'> {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    webhookId: row.webhook_id,
    eventId: row.event_id,
    lockedUntil,
    failedScheduledAttempts: row.failed_scheduled_attempts,
    trigger: row.next_trigger,
    succeededBefore: Boolean(row.succeeded_before),
    dueAt: row.next_attempt_at ?? nowIso,
    url: row.url ?? '',
    // A delivery of an erased event (its payload a tombstone) is cancelled like one to a gone webhook.
    webhookActive:
      row.webhook_status === 'active' &&
      row.webhook_deleted_at === null &&
      row.payload !== null &&
      !isErasedEventPayload(row.payload),
    payload: row.payload ?? '',
    ...(row.traceparent && { traceparent: row.traceparent }),
  };
}

/** Only a failed manual attempt needs it (to return a redelivered delivery to `succeeded`). */
function succeededBefore(delivery: RawBuilder<unknown>) {
  return sql<boolean>`(${delivery}.next_trigger = 'manual' and exists (
    select 1 from delivery_attempts as a where a.delivery_id = ${delivery}.id
      and a.status_code >= 200 and a.status_code < 300 and a.error is null))`;
}

/** The claim's share per tenant: its cap, and what the worker holds already (a json object, tenant to count). */
interface Fairness {
  tenantCap: number;
  heldJson: string;
}

/**
 * SQLite: the same claim as claim_due_deliveries, one statement on the connection held with lease
 * durability (its RETURNING may not name a joined table, so the webhook, payload and secrets come from
 * subqueries; and SQLite has no LATERAL, so each tenant's most overdue are an `in` list of at most `limit`,
 * cut to the tenant's room by their row number). `'pending'` is a literal, so that SQLite uses the partial
 * index deliveries_tenant_due_idx.
 */
async function claimOnSqlite(
  storage: Pick<Storage, 'db' | 'kind' | 'transact'>,
  options: ClaimOptions,
  fairness: Fairness,
  nowIso: string,
  lockedUntil: string,
): Promise<ClaimedRow[]> {
  const webhook = (column: string) =>
    sql`(select ${sql.ref(`w.${column}`)} from webhooks as w where w.id = deliveries.webhook_id)`;
  const { limit } = options;
  const { tenantCap, heldJson } = fairness;
  const { rows } = await leaseWrite(
    storage,
    sql<ClaimedRow>`
      with recursive pending_tenants(tenant_id) as (
        select (select min(p.tenant_id) from deliveries as p where p.status = 'pending')
        union all
        select (select min(p.tenant_id) from deliveries as p
            where p.status = 'pending' and p.tenant_id > t.tenant_id)
        from pending_tenants as t where t.tenant_id is not null
      ),
      rooms as (
        select t.tenant_id, coalesce(h.value, 0) as held_count
        from pending_tenants as t left join json_each(${heldJson}) as h on h.key = t.tenant_id
        where t.tenant_id is not null and coalesce(h.value, 0) < ${tenantCap}
      ),
      ranked as (
        select c.id, c.next_attempt_at, r.held_count, ${tenantCap} - r.held_count as room,
          row_number() over (partition by c.tenant_id order by c.next_attempt_at, c.id) as n
        from rooms as r join deliveries as c on c.id in (
          select x.id from deliveries as x
          where x.tenant_id = r.tenant_id and x.status = 'pending' and x.next_attempt_at <= ${nowIso}
            and (x.locked_until is null or x.locked_until < ${nowIso})
          order by x.next_attempt_at
          limit ${limit})
      )
      update deliveries set locked_until = ${lockedUntil}, locked_by = ${options.workerId}
      where id in (
        select q.id from ranked as q where q.n <= q.room
        order by q.held_count + q.n, q.next_attempt_at
        limit ${limit}
      )
      returning id, tenant_id, webhook_id, event_id, failed_scheduled_attempts, next_trigger, next_attempt_at,
        ${webhook('url')} as url, ${webhook('status')} as webhook_status,
        ${webhook('deleted_at')} as webhook_deleted_at,
        (select e.payload from events as e where e.id = deliveries.event_id) as payload,
        (select e.traceparent from events as e where e.id = deliveries.event_id) as traceparent,
        ${succeededBefore(sql.ref('deliveries'))} as succeeded_before,
        (select json_group_array(s.ciphertext order by s.expires_at is not null, s.created_at desc)
          from webhook_secrets as s
          where s.webhook_id = deliveries.webhook_id and (s.expires_at is null or s.expires_at > ${nowIso})
        ) as secrets
    `.compile(storage.db),
  );
  return rows;
}

/** Adds the signing secrets valid at `now` to claimed deliveries (none for a webhook no longer active). */
export async function withSigningSecrets(
  storage: Pick<Storage, 'db'>,
  secretBox: SecretBox,
  claimed: readonly Omit<ClaimedDelivery, 'secrets'>[],
  now: Date,
): Promise<ClaimedDelivery[]> {
  if (claimed.length === 0) return [];
  const active = claimed.filter((delivery) => delivery.webhookActive);
  const webhookIds = [...new Set(active.map((delivery) => delivery.webhookId))];
  const secrets = await loadSigningSecrets(storage, secretBox, webhookIds, now.toISOString());
  return claimed.map((delivery) => ({
    ...delivery,
    secrets: delivery.webhookActive ? (secrets.get(delivery.webhookId) ?? []) : [],
  }));
}

/**
 * Gives back every claim `workerId` still holds, or only those on the deliveries `ids`, so another worker
 * (or this one after a restart) takes them at once; returns how many it gave back.
 */
export async function releaseClaims(
  storage: Pick<Storage, 'db'>,
  workerId: string,
  ids?: readonly string[],
): Promise<number> {
  if (ids?.length === 0) return 0;
  const result = await storage.db
    .updateTable('deliveries')
    .set({ locked_until: null, locked_by: null })
    .where('locked_by', '=', workerId)
    .$if(ids !== undefined, (update) => update.where('id', 'in', ids as readonly string[]))
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/**
 * What `locked_by` holds on a delivery parked for an endpoint that stays cut off (see EndpointThrottle):
 * no claim (`locked_until` is null, so any worker claims it once due), only a mark that resumeParked
 * makes it due again when the endpoint answers.
 */
export const PARKED = 'parked';

/**
 * Gives back claims of `workerId` on the deliveries `ids` due again at `dueAt`, with no attempt recorded
 * (their endpoint's circuit is open): the retry schedule does not advance, and no worker claims them
 * before then. `parked`: marked PARKED, so that resumeParked makes them due at once when the endpoint
 * answers again. Returns how many it gave back (those whose claim another worker took over are left alone).
 */
export async function deferClaims(
  storage: Pick<Storage, 'db'>,
  workerId: string,
  ids: readonly string[],
  dueAt: string,
  parked = false,
): Promise<number> {
  if (ids.length === 0) return 0;
  const result = await storage.db
    .updateTable('deliveries')
    .set({ next_attempt_at: dueAt, locked_until: null, locked_by: parked ? PARKED : null })
    .where('locked_by', '=', workerId)
    .where('status', '=', 'pending')
    .where('id', 'in', ids)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Parked deliveries of a webhook made due per statement of resumeParked: each statement is short. */
export const RESUME_BATCH = 2_000;

/**
 * Makes the webhook's parked deliveries due at `nowIso` (their endpoint answered again), a bounded batch
 * per statement: its next RESUME_BATCH parked deliveries after the id `after`, read through
 * `deliveries_parked_idx` (migration 0025: the parked ones alone, not the webhook's history); resolves with
 * the id to go on after, undefined when none are left. With none parked it costs an index probe.
 */
export async function resumeParked(
  storage: Pick<Storage, 'db'>,
  webhookId: string,
  nowIso: string,
  after = '',
): Promise<string | undefined> {
  const batch = await storage.db
    .selectFrom('deliveries')
    .select('id')
    .where('webhook_id', '=', webhookId)
    .where('locked_by', '=', PARKED)
    .where('id', '>', after)
    .orderBy('webhook_id')
    .orderBy('id')
    .limit(RESUME_BATCH)
    .execute();
  const last = batch.at(-1)?.id;
  if (last === undefined) return undefined;
  await storage.db
    .updateTable('deliveries')
    .set({ next_attempt_at: nowIso, locked_by: null })
    .where('webhook_id', '=', webhookId)
    .where('locked_by', '=', PARKED)
    .where('id', '>', after)
    .where('id', '<=', last)
    .where('status', '=', 'pending')
    .where('locked_until', 'is', null)
    .executeTakeFirst();
  return batch.length < RESUME_BATCH ? undefined : last;
}
