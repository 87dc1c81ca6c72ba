import { type Kysely, sql } from 'kysely';

/**
 * Fair claims of runs (run-claims.ts `claimStatement`).
 *
 * Both dialects: unfinished runs are found per tenant, through `runs_tenant_unfinished_idx` on
 * (tenant_id, id, locked_until, status) of the queued and running rows, which replaces `runs_unfinished_idx` on id
 * alone. A claim walks the tenants with unfinished runs (one index probe each) and takes each one's oldest
 * runs nobody holds, so another tenant's run is found at once however many runs one tenant queued. The
 * lease and the status are in the index so that the walk never reads a run's row (whose submitted items
 * may be a megabyte) to learn whether it is free: SQLite checks a partial index's condition on the row
 * unless the index holds its column.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('runs_tenant_unfinished_idx')
    .on('runs')
    .columns(['tenant_id', 'id', 'locked_until', 'status'])
    .where(sql.ref('status'), 'in', sql`('queued', 'running')`)
    .execute();
  await db.schema.dropIndex('runs_unfinished_idx').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('runs_unfinished_idx')
    .on('runs')
    .column('id')
    .where(sql.ref('status'), 'in', sql`('queued', 'running')`)
    .execute();
  await db.schema.dropIndex('runs_tenant_unfinished_idx').execute();
}
