import { type RawBuilder, sql } from 'kysely';

/**
 * How many leading characters of a subject key (43 characters of base64url: the tenant-keyed HMAC-SHA256 of
 * the subject) the subject indexes hold (migration 0020): 66 bits, so two subjects of one tenant share a
 * prefix about once in 10^20 pairs, and then the whole key, compared on the row, still tells them apart.
 */
export const SUBJECT_KEY_PREFIX_LENGTH = 11;

/**
 * `column = key` in the form the subject indexes answer: the key's prefix against the indexed expression
 * (`substr(column, 1, 11)`, written with literals, as the index is, so SQLite and PostgreSQL match the
 * expression) and the whole key against the column. Without the prefix term a query by subject scans.
 */
export function subjectKeyIs(
  column: 'subject_key' | 'run_items.subject_key',
  key: string,
): RawBuilder<boolean> {
  const ref = sql.ref(column);
  return sql<boolean>`substr(${ref}, 1, ${sql.lit(SUBJECT_KEY_PREFIX_LENGTH)}) = ${key.slice(0, SUBJECT_KEY_PREFIX_LENGTH)} and ${ref} = ${key}`;
}
