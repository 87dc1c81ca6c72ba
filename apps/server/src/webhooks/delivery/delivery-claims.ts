import { type RawBuilder, sql } from 'kysely';
import { type Storage, withLeaseDurability } from '../../storage/storage.js';
import type { SecretBox } from '../outbound/secret-box.js';

/** A delivery this worker holds a lease on, with what its attempt needs. */
export interface ClaimedDelivery {
  id: string;
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
  /** The signing secrets, current first; empty when the webhook is not active. */
  secrets: string[];
}

/** A claimed delivery's row, with its webhook and event as the attempt needs them. */
interface ClaimedRow {
  id: string;
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
  /** 1/0 on SQLite, true/false on PostgreSQL. */
  succeeded_before: unknown;
  /** The sealed secrets valid at the claim's time, current first: json (text on SQLite); null if none. */
  secrets: string | string[] | null;
}

type ClaimOptions = { workerId: string; now: Date; leaseMs: number; limit: number };

/**
 * Claims up to `limit` due deliveries for `workerId` with a lease until `now + leaseMs`: pending, due, and
 * not leased by a live worker, the most overdue first; then loads each one's webhook, event payload and
 * valid secrets. On PostgreSQL all of it is one round trip, the function claim_due_deliveries (migration
 * 0007): the candidate rows are locked with FOR UPDATE SKIP LOCKED, so concurrent instances claim disjoint
 * sets without waiting on each other. SQLite has a single writer. Either way the lease is written without
 * a disk flush of its own (see withLeaseDurability): a lease lost to a power failure only makes the
 * delivery claimable again.
 */
export async function claimDueDeliveries(
  storage: Pick<Storage, 'db' | 'kind'>,
  secretBox: SecretBox,
  options: ClaimOptions,
): Promise<ClaimedDelivery[]> {
  const nowIso = options.now.toISOString();
  const lockedUntil = new Date(options.now.getTime() + options.leaseMs).toISOString();
  const rows =
    storage.kind === 'postgres'
      ? (
          await sql<ClaimedRow>`
            select * from claim_due_deliveries(${options.workerId}, ${nowIso}, ${lockedUntil}, ${options.limit})
          `.execute(storage.db)
        ).rows
      : await claimOnSqlite(storage, options, nowIso, lockedUntil);
  const opened = new Map<string, string | undefined>();
  return inClaimOrder(rows, nowIso).map((row) => {
    const delivery = claimedDelivery(row, lockedUntil, nowIso);
    // PostgreSQL answers the json as an array, SQLite as its text.
    const sealed: string[] = typeof row.secrets === 'string' ? JSON.parse(row.secrets) : (row.secrets ?? []);
    return { ...delivery, secrets: delivery.webhookActive ? openEach(secretBox, sealed, opened) : [] };
  });
}

/** The most overdue first (ISO times sort as text; a row without a due time counts as due now). */
function inClaimOrder<Row extends ClaimedRow>(rows: Row[], nowIso: string): Row[] {
  const dueAt = (row: ClaimedRow) => row.next_attempt_at ?? nowIso;
  return rows.sort((a, b) => (dueAt(a) < dueAt(b) ? -1 : dueAt(a) > dueAt(b) ? 1 : 0));
}

function claimedDelivery(
  row: ClaimedRow,
  lockedUntil: string,
  nowIso: string,
): Omit<ClaimedDelivery, 'secrets'> {
  return {
    id: row.id,
    webhookId: row.webhook_id,
    eventId: row.event_id,
    lockedUntil,
    failedScheduledAttempts: row.failed_scheduled_attempts,
    trigger: row.next_trigger,
    succeededBefore: Boolean(row.succeeded_before),
    dueAt: row.next_attempt_at ?? nowIso,
    url: row.url ?? '',
    webhookActive: row.webhook_status === 'active' && row.webhook_deleted_at === null && row.payload !== null,
    payload: row.payload ?? '',
  };
}

/**
 * Opens sealed secrets, each once per call (`opened` remembers them); one sealed under another key
 * (SECRETS_KEY changed) is left out: it cannot sign, the others still do.
 */
function openEach(
  secretBox: SecretBox,
  sealed: readonly string[],
  opened: Map<string, string | undefined>,
): string[] {
  const secrets: string[] = [];
  for (const ciphertext of sealed) {
    if (!opened.has(ciphertext)) {
      try {
        opened.set(ciphertext, secretBox.open(ciphertext));
      } catch {
        opened.set(ciphertext, undefined);
      }
    }
    const secret = opened.get(ciphertext);
    if (secret !== undefined) secrets.push(secret);
  }
  return secrets;
}

/** Only a failed manual attempt needs it (to return a redelivered delivery to `succeeded`). */
function succeededBefore(delivery: RawBuilder<unknown>) {
  return sql<boolean>`(${delivery}.next_trigger = 'manual' and exists (
    select 1 from delivery_attempts as a where a.delivery_id = ${delivery}.id
      and a.status_code >= 200 and a.status_code < 300 and a.error is null))`;
}

/**
 * SQLite: the same claim as claim_due_deliveries, one statement on the connection held with lease
 * durability (its RETURNING may not name a joined table, so the webhook, payload and secrets come from
 * subqueries). `'pending'` is a literal, so that SQLite uses the partial index deliveries_due_idx.
 */
async function claimOnSqlite(
  storage: Pick<Storage, 'db' | 'kind'>,
  options: ClaimOptions,
  nowIso: string,
  lockedUntil: string,
): Promise<ClaimedRow[]> {
  const webhook = (column: string) =>
    sql`(select ${sql.ref(`w.${column}`)} from webhooks as w where w.id = deliveries.webhook_id)`;
  const { rows } = await withLeaseDurability(storage, (leaseDb) =>
    sql<ClaimedRow>`
      update deliveries set locked_until = ${lockedUntil}, locked_by = ${options.workerId}
      where id in (
        select id from deliveries
        where status = 'pending' and next_attempt_at <= ${nowIso}
          and (locked_until is null or locked_until < ${nowIso})
        order by next_attempt_at
        limit ${options.limit}
      )
      returning id, webhook_id, event_id, failed_scheduled_attempts, next_trigger, next_attempt_at,
        ${webhook('url')} as url, ${webhook('status')} as webhook_status,
        ${webhook('deleted_at')} as webhook_deleted_at,
        (select e.payload from events as e where e.id = deliveries.event_id) as payload,
        ${succeededBefore(sql.ref('deliveries'))} as succeeded_before,
        (select json_group_array(s.ciphertext order by s.expires_at is not null, s.created_at desc)
          from webhook_secrets as s
          where s.webhook_id = deliveries.webhook_id and (s.expires_at is null or s.expires_at > ${nowIso})
        ) as secrets
    `.execute(leaseDb),
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
 * The secrets each webhook signs with at `nowIso`, opened: the current one (no expiry) first, then the
 * rotated ones still in their grace period, newest first (rotation retires all but the newest
 * MAX_SIGNING_OLD_SECRETS of those).
 */
export async function loadSigningSecrets(
  storage: Pick<Storage, 'db'>,
  secretBox: SecretBox,
  webhookIds: string[],
  nowIso: string,
): Promise<Map<string, string[]>> {
  const bySecret = new Map<string, string[]>();
  if (webhookIds.length === 0) return bySecret;
  const rows = await storage.db
    .selectFrom('webhook_secrets')
    .select(['webhook_id', 'ciphertext', 'expires_at'])
    .where('webhook_id', 'in', webhookIds)
    .where((valid) => valid.or([valid('expires_at', 'is', null), valid('expires_at', '>', nowIso)]))
    .orderBy('created_at', 'desc')
    .execute();
  const currentFirst = [
    ...rows.filter((r) => r.expires_at === null),
    ...rows.filter((r) => r.expires_at !== null),
  ];
  const opened = new Map<string, string | undefined>();
  for (const row of currentFirst) {
    const list = bySecret.get(row.webhook_id) ?? [];
    list.push(...openEach(secretBox, [row.ciphertext], opened));
    bySecret.set(row.webhook_id, list);
  }
  return bySecret;
}

/** Gives back every claim `workerId` still holds, so another worker (or this one after a restart) takes them at once. */
export async function releaseClaims(storage: Pick<Storage, 'db'>, workerId: string): Promise<number> {
  const result = await storage.db
    .updateTable('deliveries')
    .set({ locked_until: null, locked_by: null })
    .where('locked_by', '=', workerId)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
