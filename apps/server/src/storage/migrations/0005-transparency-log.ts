import { type Kysely, PostgresAdapter, sql } from 'kysely';
import { bytesColumnType } from './column-types.js';

/**
 * The verifiable log (RFC 9162 Merkle tree per tenant). A record's `leaf_index` is set once by the
 * sequencer; records still waiting for one sit in a partial index, so finding them never scans the log.
 * `log_tiles` holds the tree's hashes as C2SP tlog-tiles (a wider copy of a partial tile is a new row),
 * `log_checkpoints` every signed tree head. Triggers make all three append-only: a sequenced record, a
 * tile or a checkpoint can be neither updated nor deleted, whatever code runs.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function up(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  const bytes = bytesColumnType(db);
  await db.schema.alterTable('log_records').addColumn('leaf_index', 'bigint').execute();
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

  await db.schema
    .createTable('log_tiles')
    .addColumn('tenant_id', 'text', (col) => col.notNull())
    .addColumn('level', 'integer', (col) => col.notNull())
    .addColumn('tile_index', 'bigint', (col) => col.notNull())
    .addColumn('width', 'integer', (col) => col.notNull())
    .addColumn('hashes', bytes, (col) => col.notNull())
    .addPrimaryKeyConstraint('log_tiles_pk', ['tenant_id', 'level', 'tile_index', 'width'])
    .execute();

  await db.schema
    .createTable('log_checkpoints')
    .addColumn('tenant_id', 'text', (col) => col.notNull())
    .addColumn('tree_size', 'bigint', (col) => col.notNull())
    .addColumn('root_hash', bytes, (col) => col.notNull())
    .addColumn('note', 'text', (col) => col.notNull())
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addPrimaryKeyConstraint('log_checkpoints_pk', ['tenant_id', 'tree_size'])
    .execute();

  const refusal = 'the verifiable log is append-only';
  if (postgres) {
    await sql
      .raw(`CREATE FUNCTION refuse_log_change() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION '${refusal}: % on % refused', TG_OP, TG_TABLE_NAME; END $$`)
      .execute(db);
    await sql
      .raw(`CREATE TRIGGER log_records_sequenced_immutable BEFORE UPDATE ON log_records FOR EACH ROW
        WHEN (OLD.leaf_index IS NOT NULL OR NEW.bytes IS DISTINCT FROM OLD.bytes OR NEW.cid IS DISTINCT FROM OLD.cid
              OR NEW.tenant_id IS DISTINCT FROM OLD.tenant_id)
        EXECUTE FUNCTION refuse_log_change()`)
      .execute(db);
    for (const [name, table, event] of TRIGGERS) {
      await sql
        .raw(
          `CREATE TRIGGER ${name} BEFORE ${event} ON ${table} FOR EACH ROW EXECUTE FUNCTION refuse_log_change()`,
        )
        .execute(db);
    }
  } else {
    await sql
      .raw(`CREATE TRIGGER log_records_sequenced_immutable BEFORE UPDATE ON log_records
        WHEN OLD.leaf_index IS NOT NULL OR NEW.bytes IS NOT OLD.bytes OR NEW.cid IS NOT OLD.cid
             OR NEW.tenant_id IS NOT OLD.tenant_id
        BEGIN SELECT RAISE(ABORT, '${refusal}'); END`)
      .execute(db);
    for (const [name, table, event] of TRIGGERS) {
      await sql
        .raw(
          `CREATE TRIGGER ${name} BEFORE ${event} ON ${table} BEGIN SELECT RAISE(ABORT, '${refusal}'); END`,
        )
        .execute(db);
    }
  }
}

/** Triggers that refuse every change of their kind: [name, table, UPDATE | DELETE]. */
const TRIGGERS = [
  ['log_records_no_delete', 'log_records', 'DELETE'],
  ['log_tiles_no_update', 'log_tiles', 'UPDATE'],
  ['log_tiles_no_delete', 'log_tiles', 'DELETE'],
  ['log_checkpoints_no_update', 'log_checkpoints', 'UPDATE'],
  ['log_checkpoints_no_delete', 'log_checkpoints', 'DELETE'],
] as const;

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function down(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  for (const [name, table] of [...TRIGGERS, ['log_records_sequenced_immutable', 'log_records'] as const]) {
    await sql.raw(`DROP TRIGGER IF EXISTS ${name}${postgres ? ` ON ${table}` : ''}`).execute(db);
  }
  if (postgres) await sql.raw('DROP FUNCTION IF EXISTS refuse_log_change()').execute(db);
  await db.schema.dropTable('log_checkpoints').execute();
  await db.schema.dropTable('log_tiles').execute();
  await db.schema.dropIndex('log_records_unsequenced_idx').execute();
  await db.schema.dropIndex('log_records_leaf_index_idx').execute();
  await db.schema.alterTable('log_records').dropColumn('leaf_index').execute();
}
