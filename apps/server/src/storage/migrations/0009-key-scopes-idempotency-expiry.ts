import type { Kysely } from 'kysely';

/**
 * `api_keys.scope`: what a key may do (`full` or `log:read`, see keys/key-scope.ts); every existing key
 * becomes `full`, what it could do before.
 *
 * `idempotency_keys_created_idx` on `created_at`: the idempotency purge (idempotency/idempotency-purge.ts)
 * deletes the keys older than 24 hours in bounded batches, oldest first, without scanning the table.
 *
 * Webhook URLs stored as they were sent are rewritten in their canonical WHATWG form (`new URL(url).href`,
 * what deliveries connect to and what registration now stores), so every URL shown is the one delivered to.
 * Not undone by `down`: the canonical form is delivered to the same place.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('api_keys')
    .addColumn('scope', 'text', (col) => col.notNull().defaultTo('full'))
    .execute();
  await db.schema
    .createIndex('idempotency_keys_created_idx')
    .on('idempotency_keys')
    .column('created_at')
    .execute();
  const webhooks: { id: string; url: string }[] = await db
    .selectFrom('webhooks')
    .select(['id', 'url'])
    .execute();
  for (const { id, url } of webhooks) {
    const canonical = URL.parse(url)?.href;
    if (canonical !== undefined && canonical !== url) {
      await db.updateTable('webhooks').set({ url: canonical }).where('id', '=', id).execute();
    }
  }
}

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('idempotency_keys_created_idx').execute();
  await db.schema.alterTable('api_keys').dropColumn('scope').execute();
}
