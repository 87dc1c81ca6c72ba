import { sql } from 'kysely';
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

/**
 * Claims up to `limit` due deliveries for `workerId` with a lease until `now + leaseMs`: pending, due, and
 * not leased by a live worker, the most overdue first. On PostgreSQL the candidate rows are locked with
 * FOR UPDATE SKIP LOCKED, so concurrent instances claim disjoint sets without waiting on each other;
 * SQLite has a single writer. The lease is written without a disk flush of its own (see
 * withLeaseDurability): a lease lost to a power failure only makes the delivery claimable again. Then
 * loads each one's webhook, event payload and valid secrets.
 */
export async function claimDueDeliveries(
  storage: Pick<Storage, 'db' | 'kind'>,
  secretBox: SecretBox,
  options: { workerId: string; now: Date; leaseMs: number; limit: number },
): Promise<ClaimedDelivery[]> {
  const { db } = storage;
  const nowIso = options.now.toISOString();
  const lockedUntil = new Date(options.now.getTime() + options.leaseMs).toISOString();
  const claimed = await withLeaseDurability(storage, (leaseDb) =>
    leaseDb
      .updateTable('deliveries')
      .set({ locked_until: lockedUntil, locked_by: options.workerId })
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('deliveries')
          .select('id')
          // A literal, so that SQLite may use the partial index deliveries_due_idx (status = 'pending').
          .where('status', '=', sql.lit('pending'))
          .where('next_attempt_at', '<=', nowIso)
          .where((due) => due.or([due('locked_until', 'is', null), due('locked_until', '<', nowIso)]))
          .orderBy('next_attempt_at')
          .limit(options.limit)
          .$if(storage.kind === 'postgres', (query) => query.forUpdate().skipLocked()),
      )
      .returning([
        'id',
        'webhook_id',
        'event_id',
        'failed_scheduled_attempts',
        'next_trigger',
        'next_attempt_at',
      ])
      .execute(),
  );
  if (claimed.length === 0) return [];

  const details = await db
    .selectFrom('deliveries as d')
    .innerJoin('webhooks as w', 'w.id', 'd.webhook_id')
    .innerJoin('events as e', 'e.id', 'd.event_id')
    .select(['d.id', 'd.webhook_id', 'w.url', 'w.status', 'w.deleted_at', 'e.payload'])
    // Only a failed manual attempt needs it (to return a redelivered delivery to `succeeded`).
    .select((eb) =>
      eb
        .and([
          eb('d.next_trigger', '=', 'manual'),
          eb.exists(
            eb
              .selectFrom('delivery_attempts as a')
              .select('a.id')
              .whereRef('a.delivery_id', '=', 'd.id')
              .where('a.status_code', '>=', 200)
              .where('a.status_code', '<', 300)
              .where('a.error', 'is', null),
          ),
        ])
        .as('succeeded_before'),
    )
    .where(
      'd.id',
      'in',
      claimed.map((row) => row.id),
    )
    .execute();
  const detailById = new Map(details.map((row) => [row.id, row]));
  const deliveries = claimed.map((row) => {
    const detail = detailById.get(row.id);
    return {
      id: row.id,
      webhookId: row.webhook_id,
      eventId: row.event_id,
      lockedUntil,
      failedScheduledAttempts: row.failed_scheduled_attempts,
      trigger: row.next_trigger,
      // SQLite answers 1 or 0, PostgreSQL true or false.
      succeededBefore: Boolean(detail?.succeeded_before),
      dueAt: row.next_attempt_at ?? nowIso,
      url: detail?.url ?? '',
      webhookActive: detail !== undefined && detail.status === 'active' && detail.deleted_at === null,
      payload: detail?.payload ?? '',
    };
  });
  return withSigningSecrets(storage, secretBox, deliveries, options.now);
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
  for (const row of currentFirst) {
    const list = bySecret.get(row.webhook_id) ?? [];
    try {
      list.push(secretBox.open(row.ciphertext));
    } catch {
      // Sealed under another key (SECRETS_KEY changed): it cannot sign; the others still do.
    }
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
