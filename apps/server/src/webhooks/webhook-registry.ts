import type { Kysely, Transaction } from 'kysely';
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

/**
 * Cancels the deliveries not yet made to webhooks deleted or disabled (by the API or by their failures);
 * returns how many. Any claim is released too, so the outcome of an attempt in flight, whose write is
 * fenced on the claim, cannot overwrite the cancellation.
 */
export async function cancelPendingDeliveries(
  db: Db,
  webhookIds: readonly string[],
  now: string,
): Promise<number> {
  const result = await db
    .updateTable('deliveries')
    .set({ status: 'cancelled', next_attempt_at: null, locked_until: null, locked_by: null, updated_at: now })
    .where('webhook_id', 'in', webhookIds)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
