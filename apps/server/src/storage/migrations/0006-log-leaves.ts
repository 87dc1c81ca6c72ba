import { type Kysely, PostgresAdapter, sql } from 'kysely';
import { recordLeafHash, unpackRecord } from '../record-codec.js';
import { bytesColumnType } from './column-types.js';

/**
 * The verifiable log's leaves move out of `log_records` into insert-only tables, so sequencing a record no
 * longer rewrites its row (its bytes included) and two of its indexes. `log_leaves` holds (tenant,
 * created_at, CID, leaf index), written once per leaf; `log_leaf_queue` the records waiting for one, in
 * the order they are given leaves (created_at, CID), each with its RFC 9162 leaf hash. A trigger on
 * `log_records` queues every record inserted, in the inserting statement; the sequencer inserts the leaves
 * and deletes their queue rows in one transaction. `log_records` becomes entirely immutable (no UPDATE at
 * all, no DELETE as before), `log_leaves` append-only like the tiles and checkpoints; the queue accepts no
 * UPDATE (a waiting row leaves it only by being sequenced). Existing leaf indexes and waiting records are
 * carried over; then `log_records.leaf_index`, its two indexes and its trigger are dropped.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function up(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  const bytes = bytesColumnType(db);
  // SQLite: rowid-less tables, stored in their primary key's order (no rowid b-tree beside it).
  const clustered = sql`${sql.raw(postgres ? '' : 'without rowid')}`;

  // Keyed like the queue (and found from a record's row by its created_at and CID): leaves are appended in
  // that order, so both of its b-trees grow at their right edge. A key of (tenant, CID), random, would
  // dirty about one page per leaf.
  await db.schema
    .createTable('log_leaves')
    .addColumn('tenant_id', 'text', (col) => col.notNull())
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('cid', 'text', (col) => col.notNull())
    .addColumn('leaf_index', 'bigint', (col) => col.notNull())
    .addPrimaryKeyConstraint('log_leaves_pk', ['tenant_id', 'created_at', 'cid'])
    .modifyEnd(clustered)
    .execute();
  await createLogLeavesLeafIndex0006(db);
  await db.schema
    .createTable('log_leaf_queue')
    .addColumn('tenant_id', 'text', (col) => col.notNull())
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('cid', 'text', (col) => col.notNull())
    .addColumn('leaf_hash', bytes, (col) => col.notNull())
    .addPrimaryKeyConstraint('log_leaf_queue_pk', ['tenant_id', 'created_at', 'cid'])
    .modifyEnd(clustered)
    .execute();

  await sql`insert into log_leaves (tenant_id, created_at, cid, leaf_index)
    select tenant_id, created_at, cid, leaf_index from log_records where leaf_index is not null`.execute(db);
  // The records still waiting: few (one interval's worth), hashed here as the log store hashes them.
  const { rows: waiting } = await sql<{
    tenant_id: string;
    created_at: string;
    cid: string;
    bytes: Uint8Array;
  }>`
    select tenant_id, created_at, cid, bytes from log_records where leaf_index is null`.execute(db);
  for (let start = 0; start < waiting.length; start += 1000) {
    await db
      .insertInto('log_leaf_queue')
      .values(
        waiting.slice(start, start + 1000).map((row) => ({
          tenant_id: row.tenant_id,
          created_at: row.created_at,
          cid: row.cid,
          // Of the record's own bytes: a database migrated down past 0022 and up again holds packed ones.
          leaf_hash: recordLeafHash(unpackRecord(row.bytes)),
        })),
      )
      .execute();
  }

  await sql
    .raw(`DROP TRIGGER log_records_sequenced_immutable${postgres ? ' ON log_records' : ''}`)
    .execute(db);
  await db.schema.dropIndex('log_records_unsequenced_idx').execute();
  await db.schema.dropIndex('log_records_leaf_index_idx').execute();
  await db.schema.alterTable('log_records').dropColumn('leaf_index').execute();

  for (const [name, table, event] of TRIGGERS) {
    await sql
      .raw(
        postgres
          ? `CREATE TRIGGER ${name} BEFORE ${event} ON ${table} FOR EACH ROW EXECUTE FUNCTION refuse_log_change()`
          : `CREATE TRIGGER ${name} BEFORE ${event} ON ${table} BEGIN SELECT RAISE(ABORT, '${REFUSAL}'); END`,
      )
      .execute(db);
  }
  // The database queues each record an INSERT inserted (not those ON CONFLICT left alone) with its leaf
  // hash, in that statement: whatever code inserts a record, it is queued, once, with no second statement
  // on the scoring's commit. PostgreSQL hashes with its built-in sha256 (PostgreSQL 11+), once per
  // statement from its transition table; SQLite with `log_leaf_hash`, which every connection of the
  // server registers (storage/sqlite-database.ts): SQLite has no SHA-256 of its own.
  if (postgres) {
    await sql
      .raw(`CREATE FUNCTION queue_log_leaves() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          INSERT INTO log_leaf_queue (tenant_id, created_at, cid, leaf_hash)
          SELECT tenant_id, created_at, cid, sha256(decode('00', 'hex') || bytes) FROM inserted_records;
          RETURN NULL;
        END $$`)
      .execute(db);
    await sql
      .raw(`CREATE TRIGGER log_records_queue_leaves AFTER INSERT ON log_records
        REFERENCING NEW TABLE AS inserted_records FOR EACH STATEMENT EXECUTE FUNCTION queue_log_leaves()`)
      .execute(db);
  } else {
    await sql
      .raw(`CREATE TRIGGER log_records_queue_leaves AFTER INSERT ON log_records BEGIN
        INSERT INTO log_leaf_queue (tenant_id, created_at, cid, leaf_hash)
        VALUES (NEW.tenant_id, NEW.created_at, NEW.cid, log_leaf_hash(NEW.bytes));
      END`)
      .execute(db);
  }
}

/** As in 0005: the message every refused change gives. */
const REFUSAL = 'the verifiable log is append-only';

/** Triggers that refuse every change of their kind: [name, table, UPDATE | DELETE]. */
const TRIGGERS = [
  ['log_records_no_update', 'log_records', 'UPDATE'],
  ['log_leaves_no_update', 'log_leaves', 'UPDATE'],
  ['log_leaves_no_delete', 'log_leaves', 'DELETE'],
  ['log_leaf_queue_no_update', 'log_leaf_queue', 'UPDATE'],
] as const;

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function down(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  for (const [name, table] of TRIGGERS) {
    await sql.raw(`DROP TRIGGER IF EXISTS ${name}${postgres ? ` ON ${table}` : ''}`).execute(db);
  }
  await sql.raw(`DROP TRIGGER log_records_queue_leaves${postgres ? ' ON log_records' : ''}`).execute(db);
  if (postgres) await sql.raw('DROP FUNCTION queue_log_leaves()').execute(db);
  await db.schema.alterTable('log_records').addColumn('leaf_index', 'bigint').execute();
  await sql`update log_records set leaf_index = (
      select leaf_index from log_leaves
      where log_leaves.tenant_id = log_records.tenant_id and log_leaves.created_at = log_records.created_at
        and log_leaves.cid = log_records.cid
    )`.execute(db);
  await db.schema
    .createIndex('log_records_leaf_index_idx')
    .on('log_records')
    .columns(['tenant_id', 'leaf_index'])
    .unique()
    .execute();
  await db.schema
    .createIndex('log_records_unsequenced_idx')
    .on('log_records')
    .columns(['tenant_id', 'created_at', 'cid'])
    .where(sql.ref('leaf_index'), 'is', null)
    .execute();
  await sql
    .raw(
      postgres
        ? `CREATE TRIGGER log_records_sequenced_immutable BEFORE UPDATE ON log_records FOR EACH ROW
        WHEN (OLD.leaf_index IS NOT NULL OR NEW.bytes IS DISTINCT FROM OLD.bytes OR NEW.cid IS DISTINCT FROM OLD.cid
              OR NEW.tenant_id IS DISTINCT FROM OLD.tenant_id)
        EXECUTE FUNCTION refuse_log_change()`
        : `CREATE TRIGGER log_records_sequenced_immutable BEFORE UPDATE ON log_records
        WHEN OLD.leaf_index IS NOT NULL OR NEW.bytes IS NOT OLD.bytes OR NEW.cid IS NOT OLD.cid
             OR NEW.tenant_id IS NOT OLD.tenant_id
        BEGIN SELECT RAISE(ABORT, '${REFUSAL}'); END`,
    )
    .execute(db);
  await db.schema.dropTable('log_leaf_queue').execute();
  await db.schema.dropTable('log_leaves').execute();
}

/** 0006's unique index of the leaves by (tenant, leaf index); 0023 drops it, and its `down` makes it again. */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function createLogLeavesLeafIndex0006(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('log_leaves_leaf_index_idx')
    .on('log_leaves')
    .columns(['tenant_id', 'leaf_index'])
    .unique()
    .execute();
}
