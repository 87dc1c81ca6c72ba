import { type Kysely, PostgresAdapter, sql } from 'kysely';

/**
 * Erasure of a subject's personal data (issue 25, docs/personal-data.md).
 *
 * - `subject_key` on `log_records`, `run_items` and `events`: the tenant-keyed hash of the subject
 *   (keys/tenant-keyed-hash.ts, purpose `subject`), filled on insert, indexed with the tenant, so an erasure
 *   or an access request finds a subject's rows by an index, never by the plain subject. Rows written before
 *   this migration have it null (the secret is not known to a migration); the erasure worker scans a
 *   tenant's null-keyed rows for the subject once per erasure (erasure/erasure-store.ts).
 * - `erasure_id` on `log_records` and `run_items`: the erasure that cleared the row.
 * - `erasures`: the durable to-do of each erasure (by subject, or by retention), processed in bounded
 *   batches by the erasure worker, resumable after a crash.
 * - The immutability of `log_records` (migration 0006: no UPDATE at all) becomes: no UPDATE except an
 *   erasure's (the bytes become empty, the subject key null, `erasure_id` set once, nothing else changes)
 *   or the keying of a row from before this migration (`subject_key` set from null, nothing else changes).
 *   Leaves, the leaf queue, tiles and checkpoints stay exactly as immutable as before.
 */
/** 0010's index of the subject's log records (0020 replaced it; its down makes this one again). */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function createLogRecordsSubjectIndex0010(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('log_records_subject_idx')
    .on('log_records')
    .columns(['tenant_id', 'subject_key', 'cid'])
    .where(sql.ref('subject_key'), 'is not', null)
    .execute();
}

/** 0010's index of the erased log records (0021 replaced it; its down makes this one again). */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function createLogRecordsErasureIndex0010(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('log_records_erasure_idx')
    .on('log_records')
    .columns(['tenant_id', 'erasure_id'])
    .where(sql.ref('erasure_id'), 'is not', null)
    .execute();
}

/** 0010's index of the subject's run items (0020 replaced it; its down makes this one again). */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function createRunItemsSubjectIndex0010(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('run_items_subject_idx')
    .on('run_items')
    .column('subject_key')
    .where(sql.ref('subject_key'), 'is not', null)
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function up(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  for (const table of ['log_records', 'run_items', 'events']) {
    await db.schema.alterTable(table).addColumn('subject_key', 'text').execute();
  }
  await db.schema.alterTable('log_records').addColumn('erasure_id', 'text').execute();
  await db.schema.alterTable('run_items').addColumn('erasure_id', 'text').execute();
  await createLogRecordsSubjectIndex0010(db);
  // The rows no subject key finds (written before this migration, or without one): the erasure worker
  // scans these, a tenant's at a time, and keys them as it goes.
  await db.schema
    .createIndex('log_records_unkeyed_idx')
    .on('log_records')
    .columns(['tenant_id', 'cid'])
    .where(sql<boolean>`subject_key is null and erasure_id is null`)
    .execute();
  await db.schema
    .createIndex('run_items_unkeyed_idx')
    .on('run_items')
    .columns(['run_id', 'item_index'])
    .where(sql<boolean>`subject_key is null and erasure_id is null`)
    .execute();
  await createLogRecordsErasureIndex0010(db);
  await createRunItemsSubjectIndex0010(db);
  await db.schema
    .createIndex('events_subject_idx')
    .on('events')
    .columns(['tenant_id', 'subject_key', 'id'])
    .where(sql.ref('subject_key'), 'is not', null)
    .execute();

  await db.schema
    .createTable('erasures')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('tenant_id', 'text', (col) => col.notNull())
    .addColumn('kind', 'text', (col) => col.notNull())
    .addColumn('status', 'text', (col) => col.notNull())
    // The subject (kind `subject`), kept only until the erasure completes: the scan of rows from before
    // migration 0010 and of runs' submitted items compares it. Null once completed.
    .addColumn('subject', 'text')
    .addColumn('subject_key', 'text')
    // Kind `retention`: records created before this time are erased.
    .addColumn('before', 'text')
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('erased_at', 'text')
    .addColumn('completed_at', 'text')
    .addColumn('log_records', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('run_items', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('run_inputs', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('events', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('delivery_attempts', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('idempotency_answers', 'integer', (col) => col.notNull().defaultTo(0))
    // Where the current phase's scan is (phase:cursor), so a resumed erasure does not start over.
    .addColumn('progress', 'text', (col) => col.notNull().defaultTo(''))
    .addColumn('locked_until', 'text')
    .addColumn('locked_by', 'text')
    .execute();
  await db.schema
    .createIndex('erasures_open_idx')
    .on('erasures')
    .columns(['status', 'created_at'])
    .where(sql.ref('status'), '<>', 'completed')
    .execute();
  await db.schema.createIndex('erasures_tenant_idx').on('erasures').columns(['tenant_id', 'id']).execute();

  await sql.raw(`DROP TRIGGER log_records_no_update${postgres ? ' ON log_records' : ''}`).execute(db);
  await sql
    .raw(
      postgres
        ? `CREATE TRIGGER log_records_erase_only BEFORE UPDATE ON log_records FOR EACH ROW
        WHEN (NEW.tenant_id IS DISTINCT FROM OLD.tenant_id OR NEW.cid IS DISTINCT FROM OLD.cid
              OR NEW.created_at IS DISTINCT FROM OLD.created_at OR NEW.request_id IS DISTINCT FROM OLD.request_id
              OR NOT (${ERASE_PG} OR ${KEY_PG}))
        EXECUTE FUNCTION refuse_log_change()`
        : `CREATE TRIGGER log_records_erase_only BEFORE UPDATE ON log_records
        WHEN NEW.tenant_id IS NOT OLD.tenant_id OR NEW.cid IS NOT OLD.cid
             OR NEW.created_at IS NOT OLD.created_at OR NEW.request_id IS NOT OLD.request_id
             OR NOT (${ERASE_SQLITE} OR ${KEY_SQLITE})
        BEGIN SELECT RAISE(ABORT, '${REFUSAL}'); END`,
    )
    .execute(db);
}

/** As in 0005: the message every refused change gives. */
const REFUSAL = 'the verifiable log is append-only';

/** An erasure: bytes emptied, key cleared, `erasure_id` set once. */
const ERASE_SQLITE =
  '(OLD.erasure_id IS NULL AND NEW.erasure_id IS NOT NULL AND length(NEW.bytes) = 0 AND NEW.subject_key IS NULL)';
const ERASE_PG =
  '(OLD.erasure_id IS NULL AND NEW.erasure_id IS NOT NULL AND octet_length(NEW.bytes) = 0 AND NEW.subject_key IS NULL)';
/** The keying of a row from before 0010: only `subject_key`, from null. */
const KEY_SQLITE =
  '(OLD.subject_key IS NULL AND NEW.subject_key IS NOT NULL AND NEW.bytes IS OLD.bytes AND NEW.erasure_id IS OLD.erasure_id)';
const KEY_PG =
  '(OLD.subject_key IS NULL AND NEW.subject_key IS NOT NULL AND NEW.bytes = OLD.bytes AND NEW.erasure_id IS NOT DISTINCT FROM OLD.erasure_id)';

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function down(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  await sql.raw(`DROP TRIGGER log_records_erase_only${postgres ? ' ON log_records' : ''}`).execute(db);
  await sql
    .raw(
      postgres
        ? 'CREATE TRIGGER log_records_no_update BEFORE UPDATE ON log_records FOR EACH ROW EXECUTE FUNCTION refuse_log_change()'
        : `CREATE TRIGGER log_records_no_update BEFORE UPDATE ON log_records BEGIN SELECT RAISE(ABORT, '${REFUSAL}'); END`,
    )
    .execute(db);
  await db.schema.dropTable('erasures').execute();
  for (const index of [
    'log_records_unkeyed_idx',
    'run_items_unkeyed_idx',
    'log_records_subject_idx',
    'log_records_erasure_idx',
    'run_items_subject_idx',
    'events_subject_idx',
  ]) {
    await db.schema.dropIndex(index).execute();
  }
  await db.schema.alterTable('log_records').dropColumn('erasure_id').execute();
  await db.schema.alterTable('run_items').dropColumn('erasure_id').execute();
  for (const table of ['log_records', 'run_items', 'events']) {
    await db.schema.alterTable(table).dropColumn('subject_key').execute();
  }
}
