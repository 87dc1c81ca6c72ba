import { type Kysely, PostgresAdapter, sql } from 'kysely';

/**
 * Log records stored packed (issue 29, storage/record-codec.ts): `log_records.bytes` holds a record's
 * compressed form (first byte 0x01, codec 1) from now on; rows stored before stay as they are (first byte
 * `{`: a record is JSON).
 * The leaf hash is of the record's own bytes, so the statement that queues a record for its leaf must
 * unpack it:
 *
 * - SQLite: the trigger of migration 0006 stays; its `log_leaf_hash`, registered by the server's
 *   connection (storage/sqlite-connection-thread.ts), unpacks a packed record before it hashes.
 * - PostgreSQL cannot unpack, so the server's insert queues each packed record it inserts itself, in the
 *   same statement (a data-modifying WITH, score-log-store.ts `logRowInserts`), with the leaf hash it made
 *   from the record. The trigger of 0006 now queues only the records stored plain (an older server's, or a
 *   row written by hand), so that each record is queued once, by one of the two.
 *
 * Nothing is rewritten: the rows already stored stay plain (the records are immutable, migration 0006).
 * Every process sharing a database must run a server of this version or later once this has run: an older
 * one would serve a packed record's stored form as its bytes. Going down (`down`) queues every row by the
 * trigger again: only before any packed record is stored.
 */

/**
 * PostgreSQL's queuing function of migration 0006, queuing the rows `where` admits (0006's queued every
 * row: its text is this one's with no condition).
 */
function queueLogLeaves(where: string): string {
  return `CREATE OR REPLACE FUNCTION queue_log_leaves() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          INSERT INTO log_leaf_queue (tenant_id, created_at, cid, leaf_hash)
          SELECT tenant_id, created_at, cid, sha256(decode('00', 'hex') || bytes) FROM inserted_records${where};
          RETURN NULL;
        END $$`;
}

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql.raw(queueLogLeaves(" WHERE substring(bytes from 1 for 1) <> decode('01', 'hex')")).execute(db);
}

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function down(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql.raw(queueLogLeaves('')).execute(db);
}
