import { type Kysely, sql } from 'kysely';
import { cidPrefix, subjectKeyPrefix } from '../subject-key-index.js';
import { createLogRecordsSubjectIndex0010, createRunItemsSubjectIndex0010 } from './0010-erasure.js';

/**
 * The subject indexes hold prefixes instead of whole values: `log_records_subject_idx` is
 * (tenant_id, substr(subject_key, 1, 11), substr(cid, 1, 20)) instead of (tenant_id, subject_key, cid), and
 * `run_items_subject_idx` (substr(subject_key, 1, 11)) instead of (subject_key). A query by subject names both
 * the prefix (the index's term) and the whole key (checked on the row), and a page of a subject's records
 * walks the index in the order of the CIDs' prefixes (erasure-store.ts). The keys are keyed hashes, so every
 * scoring's entry lands on a random leaf page; entries of about 45 bytes instead of about 140 make the
 * index a fraction of its size, and a group commit dirties and writes fewer of its pages (docs/benchmarks.md,
 * "The subject index by prefix").
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function up(db: Kysely<any>): Promise<void> {
  // The very expressions the queries name (subject-key-index.ts), so both databases match them to the index.
  const prefix = subjectKeyPrefix();
  await db.schema.dropIndex('log_records_subject_idx').execute();
  await sql`create index log_records_subject_idx on log_records (tenant_id, ${prefix}, ${cidPrefix}) where subject_key is not null`.execute(
    db,
  );
  await db.schema.dropIndex('run_items_subject_idx').execute();
  await sql`create index run_items_subject_idx on run_items (${prefix}) where subject_key is not null`.execute(
    db,
  );
}

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('log_records_subject_idx').execute();
  await createLogRecordsSubjectIndex0010(db);
  await db.schema.dropIndex('run_items_subject_idx').execute();
  await createRunItemsSubjectIndex0010(db);
}
