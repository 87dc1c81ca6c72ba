import type { Kysely } from 'kysely';

/**
 * `deployment_keys`: what proves an instance holds the keys the database was set up with (see
 * storage/deployment-keys.ts). One row per key, written once by the first instance that starts: a check
 * value of `SECRETS_KEY` (an HMAC of a constant under it, never the key or a plain hash of it) and the
 * log's public verifier key.
 *
 * `log_checkpoints_created_idx` on `created_at`: the metrics read the newest checkpoint's time at every
 * scrape (metrics/database-gauges.ts) without scanning every checkpoint ever signed.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('deployment_keys')
    .addColumn('name', 'text', (col) => col.primaryKey())
    .addColumn('value', 'text', (col) => col.notNull())
    .addColumn('created_at', 'text', (col) => col.notNull())
    .execute();
  await db.schema
    .createIndex('log_checkpoints_created_idx')
    .on('log_checkpoints')
    .column('created_at')
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('log_checkpoints_created_idx').execute();
  await db.schema.dropTable('deployment_keys').execute();
}
