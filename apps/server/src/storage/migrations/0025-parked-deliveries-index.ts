import { type Kysely, sql } from 'kysely';

/**
 * `deliveries_parked_idx` on (webhook_id, id) of the deliveries parked for an endpoint that stays cut off
 * (`locked_by = 'parked'`, webhooks/delivery/delivery-claims.ts): resuming a webhook's parked deliveries reads
 * them alone, not the webhook's whole history, so any instance may look whether a webhook it delivered to
 * has some (after a restart, or when another instance parked them), at the cost of an index probe.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('deliveries_parked_idx')
    .on('deliveries')
    .columns(['webhook_id', 'id'])
    .where(sql.ref('locked_by'), '=', sql.lit('parked'))
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('deliveries_parked_idx').execute();
}
