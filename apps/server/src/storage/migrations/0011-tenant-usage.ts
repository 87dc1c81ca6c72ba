import type { Kysely } from 'kysely';

/**
 * `tenant_usage`: the bytes each tenant has stored (quota/tenant-usage.ts), one row per tenant, grown by
 * the transactions that store its rows (log records, runs and run items, events, delivery attempts,
 * idempotency answers), so the storage quota can refuse creates past `TENANT_STORAGE_QUOTA`. Existing
 * data starts uncounted: the counter begins at the upgrade (rows stored before it are not in it).
 *
 * `delivery_attempts.response_body_truncated`: 1 when the stored body is the first 1 KiB of a longer
 * answer (webhooks/delivery/delivery-sender.ts); 0 for earlier attempts, whose bodies were kept up to 4 KB.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('tenant_usage')
    .addColumn('tenant_id', 'text', (col) => col.primaryKey())
    .addColumn('bytes', 'bigint', (col) => col.notNull().defaultTo(0))
    .addColumn('updated_at', 'text', (col) => col.notNull())
    .execute();
  await db.schema
    .alterTable('delivery_attempts')
    .addColumn('response_body_truncated', 'integer', (col) => col.notNull().defaultTo(0))
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('delivery_attempts').dropColumn('response_body_truncated').execute();
  await db.schema.dropTable('tenant_usage').execute();
}
