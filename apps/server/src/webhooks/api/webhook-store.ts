import { type Kysely, type Selectable, sql, type Transaction } from 'kysely';
import { newId } from '../../common/ids.js';
import type { Database, WebhooksTable } from '../../storage/database.js';
import { keysetPage, type PageRequest } from '../../storage/paging.js';
import type { Storage } from '../../storage/storage.js';

type Db = Kysely<Database> | Transaction<Database>;

/** A webhook row as stored. */
export type WebhookRow = Selectable<WebhooksTable>;

/** The most rotated secrets that keep signing beside the current one (webhooks.md). */
export const MAX_SIGNING_OLD_SECRETS = 5;

/** The tenant's webhook `id`, unless it does not exist, is another tenant's or was deleted. */
export function findWebhook(db: Db, tenantId: string, id: string): Promise<WebhookRow | undefined> {
  return db
    .selectFrom('webhooks')
    .selectAll()
    .where('id', '=', id)
    .where('tenant_id', '=', tenantId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

/** How many webhooks the tenant has (active or disabled, not deleted). */
export async function countWebhooks(db: Db, tenantId: string): Promise<number> {
  const { count } = await db
    .selectFrom('webhooks')
    .select((eb) => eb.fn.countAll<string | number>().as('count'))
    .where('tenant_id', '=', tenantId)
    .where('deleted_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(count);
}

/**
 * The tenant's live webhooks, counted so that no concurrent registration can count the same number and
 * insert too: on PostgreSQL the transaction first takes the tenant's advisory lock (held to its end), so
 * registrations of one tenant run one at a time; SQLite's `begin immediate` already runs one write
 * transaction at a time.
 */
export async function countWebhooksForInsert(
  trx: Transaction<Database>,
  kind: Storage['kind'],
  tenantId: string,
): Promise<number> {
  if (kind === 'postgres')
    await sql`select pg_advisory_xact_lock(hashtext('scenario-scoring/webhook-limit'), hashtext(${tenantId}))`.execute(
      trx,
    );
  return countWebhooks(trx, tenantId);
}

/** One page of the tenant's webhooks, newest first, with one extra row when another page follows. */
export function listWebhookRows(db: Db, tenantId: string, page: PageRequest): Promise<WebhookRow[]> {
  const query = db
    .selectFrom('webhooks')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('deleted_at', 'is', null);
  return keysetPage(query, page).execute();
}

/** What a webhook is registered with. */
export interface NewWebhook {
  tenantId: string;
  url: string;
  /** Event types, or `["*"]`. */
  events: readonly string[];
  description?: string | null;
  /** Its cap on attempts per second; none when absent or null. */
  maxDeliveriesPerSecond?: number | null;
}

/**
 * Inserts an active webhook and its first secret, given sealed (`ciphertext`), both created at `now`;
 * returns the row. The API's registration, the test fixtures and the benchmark all create webhooks here.
 */
export async function insertNewWebhook(
  trx: Transaction<Database>,
  webhook: NewWebhook,
  ciphertext: string,
  now: Date,
): Promise<WebhookRow> {
  const at = now.toISOString();
  const row: WebhookRow = {
    id: newId('wh'),
    tenant_id: webhook.tenantId,
    url: webhook.url,
    events: JSON.stringify(webhook.events),
    description: webhook.description ?? null,
    status: 'active',
    disabled_reason: null,
    failing_since: null,
    created_at: at,
    updated_at: at,
    deleted_at: null,
    max_deliveries_per_second: webhook.maxDeliveriesPerSecond ?? null,
    rate_next_at_ms: null,
  };
  await trx.insertInto('webhooks').values(row).execute();
  await trx
    .insertInto('webhook_secrets')
    .values({ id: newId('sec'), webhook_id: row.id, ciphertext, created_at: at, expires_at: null })
    .execute();
  return row;
}

/** Applies `changes` to a webhook and returns it as it now is. */
export function updateWebhookRow(
  trx: Transaction<Database>,
  id: string,
  changes: Partial<Omit<WebhookRow, 'id' | 'tenant_id' | 'created_at'>>,
): Promise<WebhookRow> {
  return trx
    .updateTable('webhooks')
    .set(changes)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * Replaces a webhook's current secret by a new one (and marks the webhook updated): the old ones keep
 * signing until `oldExpiresAt` at the latest, and of those still signing, only the newest
 * {@link MAX_SIGNING_OLD_SECRETS} keep doing so.
 */
export async function rotateSecretRows(
  trx: Transaction<Database>,
  webhookId: string,
  next: { id: string; ciphertext: string },
  times: { now: string; oldExpiresAt: string },
): Promise<void> {
  // The webhook's row lock first: concurrent rotations of one webhook then run one after the other, each
  // seeing the secret the previous one made current (else both would stay current and sign forever).
  await trx.updateTable('webhooks').set({ updated_at: times.now }).where('id', '=', webhookId).execute();
  // No old secret signs past the new grace period: rotating with 0 after a leak retires every one of them.
  await trx
    .updateTable('webhook_secrets')
    .set({ expires_at: times.oldExpiresAt })
    .where('webhook_id', '=', webhookId)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', times.oldExpiresAt)]))
    .execute();
  await trx
    .insertInto('webhook_secrets')
    .values({ ...next, webhook_id: webhookId, created_at: times.now, expires_at: null })
    .execute();
  const signing = await trx
    .selectFrom('webhook_secrets')
    .select('id')
    .where('webhook_id', '=', webhookId)
    .where('expires_at', '>', times.now)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  const retired = signing.slice(MAX_SIGNING_OLD_SECRETS).map((row) => row.id);
  if (retired.length > 0) {
    await trx
      .updateTable('webhook_secrets')
      .set({ expires_at: times.now })
      .where('id', 'in', retired)
      .execute();
  }
}
