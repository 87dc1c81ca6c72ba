import type { Kysely } from 'kysely';

/**
 * `delivery_attempts.response_body_replaced`: 1 when the stored response body differs from the bytes the
 * receiver sent (invalid UTF-8 or U+0000 replaced by U+FFFD, so that both databases store it identically).
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('delivery_attempts')
    .addColumn('response_body_replaced', 'integer', (col) => col.notNull().defaultTo(0))
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('delivery_attempts').dropColumn('response_body_replaced').execute();
}
