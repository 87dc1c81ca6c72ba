import type { Kysely } from 'kysely';
import { bytesColumnType } from './column-types.js';

/**
 * Tenants, their API keys (SHA-256 hashes only) and the content-addressed score log.
 * Timestamps are ISO-8601 UTC text on both dialects. `log_records.tenant_id` has no foreign key on
 * purpose: the table is append-hot and its tenant always comes from an authenticated key.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('tenants')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('created_at', 'text', (col) => col.notNull())
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('tenant_id', 'text', (col) => col.notNull().references('tenants.id'))
    .addColumn('key_hash', 'text', (col) => col.notNull().unique())
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('revoked_at', 'text')
    .execute();
  await db.schema.createIndex('api_keys_tenant_id_idx').on('api_keys').column('tenant_id').execute();

  await db.schema
    .createTable('log_records')
    .addColumn('tenant_id', 'text', (col) => col.notNull())
    .addColumn('cid', 'text', (col) => col.notNull())
    .addColumn('bytes', bytesColumnType(db), (col) => col.notNull())
    .addColumn('request_id', 'text', (col) => col.notNull())
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addPrimaryKeyConstraint('log_records_pk', ['tenant_id', 'cid'])
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('log_records').execute();
  await db.schema.dropTable('api_keys').execute();
  await db.schema.dropTable('tenants').execute();
}
