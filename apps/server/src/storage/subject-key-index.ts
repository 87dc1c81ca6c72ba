import { type RawBuilder, sql } from 'kysely';

/**
 * How many leading characters of a subject key (64 lowercase hex digits: the tenant-keyed HMAC-SHA256 of the
 * subject) the subject indexes hold (migration 0020): 44 bits. A tenant with 10 million subjects has a few
 * pairs sharing a prefix; the whole key, compared on the row, tells them apart.
 */
export const SUBJECT_KEY_PREFIX_LENGTH = 11;

/**
 * How many leading characters of a record's CID `log_records_subject_idx` holds after the subject key's
 * prefix: enough to keep a subject's records in CID order in the index (`bafkrei` and 63 bits of the record's
 * SHA-256; records sharing them, if ever, are put in order by the whole CID: readSubjectRecordsPage), so a page
 * of a subject's records reads that page, not all of them.
 */
export const CID_PREFIX_LENGTH = 20;

/**
 * `column = key` in the form the subject indexes answer: the key's prefix against the indexed expression
 * (`substr(column, 1, 11)`, written with literals, as the index is, so SQLite and PostgreSQL match the
 * expression) and the whole key against the column. Without the prefix term a query by subject scans.
 */
export function subjectKeyIs(
  column: 'subject_key' | 'run_items.subject_key',
  key: string,
): RawBuilder<boolean> {
  return sql<boolean>`${subjectKeyPrefix(column)} = ${key.slice(0, SUBJECT_KEY_PREFIX_LENGTH)} and ${sql.ref(column)} = ${key}`;
}

/** The subject key's prefix as the subject indexes hold it (migration 0020 indexes this very expression). */
export function subjectKeyPrefix(
  column: 'subject_key' | 'run_items.subject_key' = 'subject_key',
): RawBuilder<string> {
  return sql<string>`substr(${sql.ref(column)}, 1, ${sql.lit(SUBJECT_KEY_PREFIX_LENGTH)})`;
}

/**
 * The CID's prefix as `log_records_subject_idx` holds it (migration 0020 indexes this very expression): a
 * subject's records are walked in its order.
 */
export const cidPrefix: RawBuilder<string> = sql<string>`substr(cid, 1, ${sql.lit(CID_PREFIX_LENGTH)})`;

/** `cid > after`, with the index's term (`cidPrefix >= after's prefix`) that lets the index skip to it. */
export function cidAfter(after: string): RawBuilder<boolean> {
  return sql<boolean>`${cidPrefix} >= ${after.slice(0, CID_PREFIX_LENGTH)} and cid > ${after}`;
}

/**
 * The condition of `log_records_subject_idx` since migration 0024: it holds scorings' records, not run items'.
 * A run item's record has its run's id as its request id (`run_…`, runs/run-batch.ts), a scoring's a `req_…`
 * one, an erasure's an `era_…` one; a run item's record is found by subject through its run item
 * (`run_items_subject_idx`, which names the record: erasure-store.ts), so indexing it twice cost
 * every run item a second random index insertion (half a run item's `log_records` INSERT on SQLite,
 * docs/benchmarks.md). Written with a literal, as the index is, so both databases match a query naming it
 * to the index.
 */
export const scoringRecordOnly: RawBuilder<boolean> = sql<boolean>`substr(request_id, 1, 4) <> ${sql.lit('run_')}`;

/**
 * The CID prefix of a run item's record as `run_items_subject_idx` holds it after the subject key's prefix
 * (migration 0024), so a subject's run items are walked in the order of their records' CIDs, as
 * `log_records_subject_idx` walks its scorings'.
 */
export const runItemCidPrefix: RawBuilder<string> = sql<string>`substr(${sql.ref('run_items.log_cid')}, 1, ${sql.lit(CID_PREFIX_LENGTH)})`;

/** `run_items.log_cid > after`, with the index's term that lets `run_items_subject_idx` skip to it. */
export function runItemCidAfter(after: string): RawBuilder<boolean> {
  return sql<boolean>`${runItemCidPrefix} >= ${after.slice(0, CID_PREFIX_LENGTH)} and ${sql.ref('run_items.log_cid')} > ${after}`;
}
