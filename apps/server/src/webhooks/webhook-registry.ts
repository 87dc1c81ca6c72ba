import type { Kysely, Transaction } from 'kysely';
import { chunks } from '../storage/chunks.js';
import type { Database } from '../storage/database.js';
import type { Storage } from '../storage/storage.js';
import type { SecretBox } from './outbound/secret-box.js';

// What both sides of webhooks need of a registered webhook: the API (registration replays, deletion,
// re-enabling) and the delivery engine (claims, disabling after failures). Neither side imports the other.

type Db = Kysely<Database> | Transaction<Database>;

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

/**
 * Opens sealed secrets, each once per call (`opened` remembers them); one sealed under another key
 * (SECRETS_KEY changed) is left out: it cannot sign, the others still do.
 */
export function openEach(
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

/** Deliveries of a webhook looked at per statement of a cancellation: each statement is short. */
export const CANCEL_BATCH = 2_000;

/**
 * Cancels a bounded batch of the deliveries not yet made to a webhook deleted or disabled (by the API or by
 * its failures): it looks at the webhook's next CANCEL_BATCH deliveries after the delivery id `after` (in
 * `deliveries_webhook_idx` order, whatever their status) and cancels the pending ones, releasing any claim,
 * so the outcome of an attempt in flight, whose write is fenced on the claim, cannot overwrite the
 * cancellation. Only while the webhook is still deleted or disabled: a webhook re-enabled meanwhile keeps
 * its deliveries. Returns how many it cancelled, and the id to go on after (undefined: none are left).
 *
 * Bounded so that deleting or disabling a webhook with a backlog of any size never holds a transaction (on
 * SQLite, the one write connection every tenant shares) for longer than one batch: the transaction that
 * deletes or disables cancels the first batch, and `cancelBacklog` the rest, a short transaction each.
 * Until then the rest stays `pending`, and is never attempted: a claim of a delivery whose webhook is
 * deleted or disabled cancels it instead (delivery-claims.ts, `webhookActive`), crash or no crash.
 */
export async function cancelPendingDeliveries(
  db: Db,
  webhookId: string,
  now: string,
  after = '',
): Promise<{ cancelled: number; next: string | undefined }> {
  const batch = await db
    .selectFrom('deliveries')
    .select('id')
    .where('webhook_id', '=', webhookId)
    .where('id', '>', after)
    .orderBy('webhook_id')
    .orderBy('id')
    .limit(CANCEL_BATCH)
    .execute();
  const last = batch.at(-1)?.id;
  if (last === undefined) return { cancelled: 0, next: undefined };
  const result = await db
    .updateTable('deliveries')
    .set({ status: 'cancelled', next_attempt_at: null, locked_until: null, locked_by: null, updated_at: now })
    .where('webhook_id', '=', webhookId)
    .where('id', '>', after)
    .where('id', '<=', last)
    .where('status', '=', 'pending')
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom('webhooks')
          .select('webhooks.id')
          .where('webhooks.id', '=', webhookId)
          .where((inactive) =>
            inactive.or([
              inactive('webhooks.status', '=', 'disabled'),
              inactive('webhooks.deleted_at', 'is not', null),
            ]),
          ),
      ),
    )
    .executeTakeFirst();
  return {
    cancelled: Number(result.numUpdatedRows),
    next: batch.length < CANCEL_BATCH ? undefined : last,
  };
}

/**
 * Cancels the rest of a deleted or disabled webhook's pending deliveries from the delivery id `after` on
 * (see cancelPendingDeliveries), one short transaction per batch, yielding to the event loop between
 * them; resolves with how many it cancelled. Each batch commits on its own, so a process stopped half-way
 * leaves the rest pending, still never attempted.
 */
export async function cancelBacklog(
  storage: Pick<Storage, 'db'>,
  webhookId: string,
  now: () => string,
  after: string | undefined = '',
): Promise<number> {
  let total = 0;
  await batchByBatch(async (next) => {
    const batch = await cancelPendingDeliveries(storage.db, webhookId, now(), next);
    total += batch.cancelled;
    return batch.next;
  }, after);
  return total;
}

/**
 * Runs a batched step over a webhook's deliveries (cancelPendingDeliveries, resumeParked) from the delivery
 * id `after` until it answers that none are left, yielding to the event loop between batches: each is a
 * short statement or transaction of its own, so requests get the connection in between.
 */
export async function batchByBatch(
  step: (after: string) => Promise<string | undefined>,
  after = '',
): Promise<void> {
  for (let next: string | undefined = after; next !== undefined; ) {
    next = await step(next);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** How many deliveries of the webhook are pending: a read (of its deliveries_webhook_idx range), no write. */
export async function countPendingDeliveries(db: Db, webhookId: string): Promise<number> {
  const row = await db
    .selectFrom('deliveries')
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .where('webhook_id', '=', webhookId)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(row?.count ?? 0);
}

/** Webhook ids per statement of inactiveWebhooks, below both dialects' bound-parameter limits. */
const IDS_PER_STATEMENT = 400;

/**
 * Which of `webhookIds` are no longer active (disabled, deleted, or gone): one short read of the primary
 * key per 400 ids. A delivery worker asks it of the webhooks whose queued deliveries it has held longer
 * than a bound (see STATUS_RECHECK_MS), to drop those deleted or disabled by another instance meanwhile.
 */
export async function inactiveWebhooks(
  db: Kysely<Database>,
  webhookIds: readonly string[],
): Promise<Set<string>> {
  const inactive = new Set(webhookIds);
  for (const ids of chunks(webhookIds, IDS_PER_STATEMENT)) {
    const active = await db
      .selectFrom('webhooks')
      .select('id')
      .where('id', 'in', ids)
      .where('status', '=', 'active')
      .where('deleted_at', 'is', null)
      .execute();
    for (const row of active) inactive.delete(row.id);
  }
  return inactive;
}

/**
 * Tells this process's delivery workers, as soon as it committed, that webhooks were deleted or disabled
 * (by the API, or by a worker's recorder for failing): each drops the deliveries of them it has claimed and
 * not yet started, so none is attempted after the answer. The database already cancelled them and cleared
 * their claims; a worker of another instance finds out by looking again (see inactiveWebhooks).
 */
export class RetiredWebhookSignal {
  readonly #listeners = new Set<(webhookIds: readonly string[]) => void>();

  /** Tells the listeners that these webhooks are deleted or disabled (committed). */
  notify(webhookIds: readonly string[]): void {
    if (webhookIds.length === 0) return;
    for (const listener of this.#listeners) listener(webhookIds);
  }

  /** Calls `listener` on every notify; returns the function that unsubscribes it. */
  subscribe(listener: (webhookIds: readonly string[]) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
