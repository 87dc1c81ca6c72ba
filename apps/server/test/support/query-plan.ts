import { CompiledQuery, type Kysely, sql } from 'kysely';
import type { Database } from '../../src/storage/database.js';

/**
 * A query's plan, one line a step: SQLite's `explain query plan` details, PostgreSQL's `explain` with scans
 * made dear (an empty or small table is cheaper to scan than to probe: forbidding scans leaves only a
 * usable index to choose).
 */
export async function queryPlan(db: Kysely<Database>, kind: string, query: CompiledQuery): Promise<string[]> {
  if (kind === 'sqlite') {
    const rows = await db.executeQuery<{ detail: string }>(
      CompiledQuery.raw(`explain query plan ${query.sql}`, [...query.parameters]),
    );
    return rows.rows.map((row) => row.detail);
  }
  return db.connection().execute(async (connection) => {
    await sql`set enable_seqscan = off`.execute(connection);
    const rows = await connection.executeQuery<{ 'QUERY PLAN': string }>(
      CompiledQuery.raw(`explain ${query.sql}`, [...query.parameters]),
    );
    await sql`reset enable_seqscan`.execute(connection);
    return rows.rows.map((row) => row['QUERY PLAN']);
  });
}
