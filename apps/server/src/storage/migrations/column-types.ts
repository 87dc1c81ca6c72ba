import { type Kysely, PostgresAdapter } from 'kysely';

/** The column type for raw bytes: `bytea` on PostgreSQL, `blob` on SQLite. */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export function bytesColumnType(db: Kysely<any>): 'bytea' | 'blob' {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'bytea' : 'blob';
}
