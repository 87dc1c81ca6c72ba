import { type Kysely, sql } from 'kysely';
import { CID_PREFIX_LENGTH, cidPrefix, scoringRecordOnly, subjectKeyPrefix } from '../subject-key-index.js';
import { up as prefixIndexes } from './0020-subject-key-prefix-indexes.js';

/**
 * A subject's records are found by two indexes that no longer overlap. `log_records_subject_idx` holds the
 * records of scorings only (`scoringRecordOnly`: not a run item's, whose request id is its run's), and
 * `run_items_subject_idx` holds, after the subject key's prefix, the first 20 characters of the item's
 * record's CID, so a run item's record is found through its run item, in CID order. Before, a run item's
 * record was in both: each run item paid two random index insertions for its subject, where it now pays
 * one (docs/benchmarks.md, "A run item's subject indexed once"). Erasure and access read both indexes
 * (erasure/erasure-store.ts, erasure/erasure-processor.ts); a run item and its record are written in one
 * transaction and erased in one, and run items are never deleted, so every run item's record stays
 * reachable through its run item.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function up(db: Kysely<any>): Promise<void> {
  const prefix = subjectKeyPrefix();
  await db.schema.dropIndex('log_records_subject_idx').execute();
  await sql`create index log_records_subject_idx on log_records (tenant_id, ${prefix}, ${cidPrefix}) where subject_key is not null and ${scoringRecordOnly}`.execute(
    db,
  );
  await db.schema.dropIndex('run_items_subject_idx').execute();
  await sql`create index run_items_subject_idx on run_items (${prefix}, substr(log_cid, 1, ${sql.lit(CID_PREFIX_LENGTH)})) where subject_key is not null`.execute(
    db,
  );
}

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function down(db: Kysely<any>): Promise<void> {
  // 0020's up drops whatever indexes have these names and makes its own.
  await prefixIndexes(db);
}
