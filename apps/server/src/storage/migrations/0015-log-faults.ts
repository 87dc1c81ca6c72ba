import type { Kysely } from 'kysely';

/**
 * `log_faults`: what the log sequencer's self-check found before signing (verifiable-log/log-self-check.ts).
 * A row with no `cleared_at` stops the sequencer for its tenant (nothing is signed) and makes `/readyz`
 * answer 503 on every instance of the database, until an operator clears it (`cli.js clear-log-fault`,
 * which checks again first). Kept after clearing, as the record of what happened.
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
}

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('log_faults').execute();
}
