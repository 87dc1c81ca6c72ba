import { type Kysely, sql } from 'kysely';

/**
 * The event outbox, webhooks with their encrypted secrets, deliveries and their attempts, and idempotency
 * keys. Booleans are integers (0/1) and JSON is text on both dialects, so one set of queries serves both.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function up(db: Kysely<any>): Promise<void> {
  // The outbox: written in the same transaction as the change that raises the event.
  await db.schema
    .createTable('events')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('tenant_id', 'text', (col) => col.notNull())
    .addColumn('type', 'text', (col) => col.notNull())
    .addColumn('payload', 'text', (col) => col.notNull())
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('dispatched_at', 'text')
    .execute();
  await db.schema
    .createIndex('events_undispatched_idx')
    .on('events')
    .column('id')
    .where(sql.ref('dispatched_at'), 'is', null)
    .execute();

  await db.schema
    .createTable('webhooks')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('tenant_id', 'text', (col) => col.notNull())
    .addColumn('url', 'text', (col) => col.notNull())
    .addColumn('events', 'text', (col) => col.notNull())
    .addColumn('description', 'text')
    .addColumn('status', 'text', (col) => col.notNull())
    .addColumn('disabled_reason', 'text')
    .addColumn('failing_since', 'text')
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('updated_at', 'text', (col) => col.notNull())
    .addColumn('deleted_at', 'text')
    .execute();
  await db.schema.createIndex('webhooks_tenant_idx').on('webhooks').columns(['tenant_id', 'id']).execute();

  // One row per secret; the current one has no expiry, rotated ones sign until `expires_at`.
  await db.schema
    .createTable('webhook_secrets')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('webhook_id', 'text', (col) => col.notNull().references('webhooks.id'))
    .addColumn('ciphertext', 'text', (col) => col.notNull())
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('expires_at', 'text')
    .execute();
  await db.schema
    .createIndex('webhook_secrets_webhook_idx')
    .on('webhook_secrets')
    .column('webhook_id')
    .execute();

  await db.schema
    .createTable('deliveries')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('tenant_id', 'text', (col) => col.notNull())
    .addColumn('webhook_id', 'text', (col) => col.notNull().references('webhooks.id'))
    .addColumn('event_id', 'text', (col) => col.notNull().references('events.id'))
    .addColumn('event_type', 'text', (col) => col.notNull())
    .addColumn('status', 'text', (col) => col.notNull())
    .addColumn('attempt_count', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('failed_scheduled_attempts', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'text')
    .addColumn('next_trigger', 'text', (col) => col.notNull().defaultTo('scheduled'))
    .addColumn('last_attempt_at', 'text')
    .addColumn('locked_until', 'text')
    .addColumn('locked_by', 'text')
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('updated_at', 'text', (col) => col.notNull())
    .addUniqueConstraint('deliveries_webhook_event_uq', ['webhook_id', 'event_id'])
    .execute();
  await db.schema
    .createIndex('deliveries_due_idx')
    .on('deliveries')
    .column('next_attempt_at')
    .where(sql.ref('status'), '=', 'pending')
    .execute();
  await db.schema
    .createIndex('deliveries_webhook_idx')
    .on('deliveries')
    .columns(['webhook_id', 'id'])
    .execute();

  await db.schema
    .createTable('delivery_attempts')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('delivery_id', 'text', (col) => col.notNull().references('deliveries.id'))
    .addColumn('attempted_at', 'text', (col) => col.notNull())
    .addColumn('status_code', 'integer', (col) => col.notNull())
    .addColumn('duration_ms', 'integer', (col) => col.notNull())
    .addColumn('error', 'text')
    .addColumn('response_body', 'text')
    .addColumn('trigger', 'text', (col) => col.notNull())
    .execute();
  await db.schema
    .createIndex('delivery_attempts_delivery_idx')
    .on('delivery_attempts')
    .columns(['delivery_id', 'id'])
    .execute();

  // Stripe semantics, per API key: the first response to a key is kept and replayed for 24 hours.
  await db.schema
    .createTable('idempotency_keys')
    .addColumn('api_key_id', 'text', (col) => col.notNull())
    .addColumn('key', 'text', (col) => col.notNull())
    .addColumn('operation', 'text', (col) => col.notNull())
    .addColumn('request_hash', 'text', (col) => col.notNull())
    .addColumn('response_status', 'integer', (col) => col.notNull())
    .addColumn('response_headers', 'text', (col) => col.notNull())
    .addColumn('response_body', 'text', (col) => col.notNull())
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['api_key_id', 'key'])
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function down(db: Kysely<any>): Promise<void> {
  for (const table of [
    'idempotency_keys',
    'delivery_attempts',
    'deliveries',
    'webhook_secrets',
    'webhooks',
    'events',
  ]) {
    await db.schema.dropTable(table).execute();
  }
}
