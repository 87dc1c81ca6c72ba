import { type Kysely, sql } from 'kysely';

/**
 * Indexes that keep an erasure's cost and its claim independent of the tenant's history
 * (erasure/erasure-store.ts, erasure/erasure-processor.ts):
 *
 * - `erasures_tenant_open_idx` on (tenant_id, created_at) of the open erasures: a claim walks the tenants
 *   with open erasures in turn (round robin) and takes each one's oldest, and an erasure's creation counts
 *   its tenant's open erasures (the per-tenant bound), without reading completed ones.
 * - `run_items_erasure_idx` on (erasure_id, run_id) of erased run items: the runs whose submitted items
 *   hold an erased subject are the runs of the items the erasure erased, found by the index instead of a
 *   scan of the text of every finished run of the tenant.
 * - `runs_failed_rest_idx` on (tenant_id, id) of the failed inline runs with items never attempted: those
 *   items have no run item (nor subject key), so these runs, and only these, are still read for the subject.
 *   (A failed NDJSON run's lines not attempted were deleted when it failed.)
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('erasures_tenant_open_idx')
    .on('erasures')
    .columns(['tenant_id', 'created_at'])
    .where(sql.ref('status'), '<>', sql.lit('completed'))
    .execute();
  await db.schema
    .createIndex('run_items_erasure_idx')
    .on('run_items')
    .columns(['erasure_id', 'run_id'])
    .where(sql.ref('erasure_id'), 'is not', null)
    .execute();
  await db.schema
    .createIndex('runs_failed_rest_idx')
    .on('runs')
    .columns(['tenant_id', 'id'])
    .where(sql<boolean>`status = 'failed' and input = 'inline' and next_index < item_count`)
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('runs_failed_rest_idx').execute();
  await db.schema.dropIndex('run_items_erasure_idx').execute();
  await db.schema.dropIndex('erasures_tenant_open_idx').execute();
}
