import { type Kysely, sql } from 'kysely';

/**
 * Runs submitted as NDJSON (run-upload.ts). Their items do not fit the run's one JSON array (up to
 * 5,000,000 lines): each line is a `run_inputs` row, written in batches as the body arrives, and deleted
 * in the transaction that commits the item's result, so a finished run keeps none (nor the subjects they
 * hold). A row holds the item as validated (`item`, JSON) or, for a line that is not a valid item, the
 * problem its item fails with (`error`) and the subject when the line had a valid one.
 *
 * `runs.input` says where a run's items are: `inline` (the `items` column, as before) or `ndjson`
 * (`run_inputs`; `items` is `[]`). While its body arrives an NDJSON run is `uploading`: no worker claims it
 * and the API does not show it; its `locked_until` is the upload's lease, renewed as lines arrive, so an
 * upload whose server died (lease passed) is deleted with its rows by the run workers (abandoned uploads).
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('runs')
    .addColumn('input', 'text', (col) => col.notNull().defaultTo('inline'))
    .execute();
  await db.schema
    .createTable('run_inputs')
    .addColumn('run_id', 'text', (col) => col.notNull())
    .addColumn('item_index', 'integer', (col) => col.notNull())
    .addColumn('subject', 'text')
    .addColumn('item', 'text')
    .addColumn('error', 'text')
    .addPrimaryKeyConstraint('run_inputs_pk', ['run_id', 'item_index'])
    .execute();
  // Abandoned uploads are found by their lease without reading every run.
  await db.schema
    .createIndex('runs_uploading_idx')
    .on('runs')
    .column('locked_until')
    .where(sql.ref('status'), '=', sql.lit('uploading'))
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('runs_uploading_idx').execute();
  await db.schema.dropTable('run_inputs').execute();
  await db.schema.alterTable('runs').dropColumn('input').execute();
}
