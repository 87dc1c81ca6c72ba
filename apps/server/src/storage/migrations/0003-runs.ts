import { type Kysely, sql } from 'kysely';

/**
 * Batch scoring runs. A run keeps its submitted items as one JSON array (written once, read once per
 * claim); `run_items` gets a row per item only when the item's batch commits, so the primary key
 * (run_id, item_index) also refuses an item scored twice. An item's result is not copied: it is read
 * from the item's log record, so the results cannot differ from what was logged. `next_index` is the first item not yet
 * committed: a worker that resumes a run starts there.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('runs')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('tenant_id', 'text', (col) => col.notNull())
    .addColumn('status', 'text', (col) => col.notNull())
    .addColumn('item_count', 'integer', (col) => col.notNull())
    .addColumn('items', 'text', (col) => col.notNull())
    .addColumn('next_index', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('succeeded', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('failed', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('escalated', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('started_at', 'text')
    .addColumn('completed_at', 'text')
    .addColumn('deadline_at', 'text')
    .addColumn('error', 'text')
    .addColumn('locked_until', 'text')
    .addColumn('locked_by', 'text')
    .addColumn('claims', 'integer', (col) => col.notNull().defaultTo(0))
    .execute();
  // Workers look for unfinished runs only; finished ones leave the index.
  await db.schema
    .createIndex('runs_unfinished_idx')
    .on('runs')
    .column('id')
    .where(sql.ref('status'), 'in', sql`('queued', 'running')`)
    .execute();

  await db.schema
    .createTable('run_items')
    .addColumn('run_id', 'text', (col) => col.notNull().references('runs.id'))
    .addColumn('item_index', 'integer', (col) => col.notNull())
    .addColumn('subject', 'text', (col) => col.notNull())
    .addColumn('status', 'text', (col) => col.notNull())
    .addColumn('log_cid', 'text')
    .addColumn('escalated', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('error', 'text')
    .addPrimaryKeyConstraint('run_items_pk', ['run_id', 'item_index'])
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('run_items').execute();
  await db.schema.dropTable('runs').execute();
}
