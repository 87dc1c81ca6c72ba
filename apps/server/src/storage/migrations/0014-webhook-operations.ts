import type { Kysely } from 'kysely';

/**
 * `webhooks.max_deliveries_per_second`: the webhook's cap on attempts per second (null: none).
 * `webhooks.rate_next_at_ms`: the earliest Unix time in milliseconds at which its next attempt may start,
 * advanced by `1000 / cap` for each attempt the delivery workers reserve (webhooks/delivery/rate-cap.ts),
 * so instances sharing PostgreSQL hold the cap together.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('webhooks').addColumn('max_deliveries_per_second', 'integer').execute();
  await db.schema.alterTable('webhooks').addColumn('rate_next_at_ms', 'bigint').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('webhooks').dropColumn('rate_next_at_ms').execute();
  await db.schema.alterTable('webhooks').dropColumn('max_deliveries_per_second').execute();
}
