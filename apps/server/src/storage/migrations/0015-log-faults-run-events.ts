import { type Kysely, sql } from 'kysely';

/**
 * `log_faults`: what the log sequencer's self-check found before signing (verifiable-log/log-self-check.ts).
 * A row with no `cleared_at` stops the sequencer for its tenant (nothing is signed) and makes `/readyz`
 * answer 503 on every instance of the database, until an operator clears it (`cli.js clear-log-fault`,
 * which checks again first). Kept after clearing, as the record of what happened.
 *
 * `runs.log_event_pending`: 1 from a run's completion until every item's record is in a signed checkpoint,
 * when its `run.completed` event (naming that checkpoint) is written and it goes back to 0. The partial
 * index finds the few waiting runs without scanning the runs.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('log_faults')
    .addColumn('tenant_id', 'text', (col) => col.notNull())
    .addColumn('detected_at', 'text', (col) => col.notNull())
    .addColumn('tree_size', 'bigint', (col) => col.notNull())
    .addColumn('first_index', 'bigint', (col) => col.notNull())
    .addColumn('end_index', 'bigint', (col) => col.notNull())
    .addColumn('reason', 'text', (col) => col.notNull())
    .addColumn('cleared_at', 'text')
    .addPrimaryKeyConstraint('log_faults_pk', ['tenant_id', 'detected_at'])
    .execute();
  await db.schema
    .alterTable('runs')
    .addColumn('log_event_pending', 'integer', (col) => col.notNull().defaultTo(0))
    .execute();
  await db.schema
    .createIndex('runs_log_event_pending_idx')
    .on('runs')
    .columns(['tenant_id'])
    .where(sql.ref('log_event_pending'), '=', 1)
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('runs_log_event_pending_idx').execute();
  await db.schema.alterTable('runs').dropColumn('log_event_pending').execute();
  await db.schema.dropTable('log_faults').execute();
}
