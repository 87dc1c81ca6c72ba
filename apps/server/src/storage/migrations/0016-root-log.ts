import { type Kysely, PostgresAdapter, sql } from 'kysely';
import { bytesColumnType } from './column-types.js';

/**
 * The root log: one RFC 9162 tree (origin `<LOG_ORIGIN>`) whose leaves are the tenants' signed
 * checkpoints, each leaf the 32 bytes SHA-256(tenant checkpoint note), so a root proof never shows a
 * tenant's name. A trigger on `log_checkpoints` queues every tenant checkpoint inserted
 * (`root_log_queue`, in the inserting transaction: a checkpoint is never signed without being queued);
 * the root sequencer moves queue rows to `root_log_leaves` (leaf index, tenant, tenant tree size), stores
 * `root_log_tiles` and signs `root_log_checkpoints`. `root_log_cosignatures` holds the witnesses'
 * cosignature lines per root checkpoint. Leaves, tiles, checkpoints and cosignatures are append-only
 * (triggers refuse UPDATE and DELETE); queue rows accept no UPDATE. Existing tenant checkpoints are queued,
 * oldest first.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function up(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  const bytes = bytesColumnType(db);
  await db.schema
    .createTable('root_log_queue')
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('tenant_id', 'text', (col) => col.notNull())
    .addColumn('tree_size', 'bigint', (col) => col.notNull())
    .addPrimaryKeyConstraint('root_log_queue_pk', ['created_at', 'tenant_id', 'tree_size'])
    .execute();
  await db.schema
    .createTable('root_log_leaves')
    .addColumn('leaf_index', 'bigint', (col) => col.notNull().primaryKey())
    .addColumn('tenant_id', 'text', (col) => col.notNull())
    .addColumn('tree_size', 'bigint', (col) => col.notNull())
    .execute();
  await db.schema
    .createIndex('root_log_leaves_checkpoint_idx')
    .on('root_log_leaves')
    .columns(['tenant_id', 'tree_size'])
    .unique()
    .execute();
  await db.schema
    .createTable('root_log_tiles')
    .addColumn('level', 'integer', (col) => col.notNull())
    .addColumn('tile_index', 'bigint', (col) => col.notNull())
    .addColumn('width', 'integer', (col) => col.notNull())
    .addColumn('hashes', bytes, (col) => col.notNull())
    .addPrimaryKeyConstraint('root_log_tiles_pk', ['level', 'tile_index', 'width'])
    .execute();
  await db.schema
    .createTable('root_log_checkpoints')
    .addColumn('tree_size', 'bigint', (col) => col.notNull().primaryKey())
    .addColumn('root_hash', bytes, (col) => col.notNull())
    .addColumn('note', 'text', (col) => col.notNull())
    .addColumn('created_at', 'text', (col) => col.notNull())
    .execute();
  await db.schema
    .createTable('root_log_cosignatures')
    .addColumn('tree_size', 'bigint', (col) => col.notNull())
    .addColumn('witness', 'text', (col) => col.notNull())
    .addColumn('line', 'text', (col) => col.notNull())
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addPrimaryKeyConstraint('root_log_cosignatures_pk', ['tree_size', 'witness'])
    .execute();

  const refusal = 'the root log is append-only';
  if (postgres) {
    await sql
      .raw(`CREATE FUNCTION queue_root_log_leaf() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          INSERT INTO root_log_queue (created_at, tenant_id, tree_size)
          VALUES (NEW.created_at, NEW.tenant_id, NEW.tree_size);
          RETURN NULL;
        END $$`)
      .execute(db);
    await sql
      .raw(`CREATE TRIGGER log_checkpoints_queue_root AFTER INSERT ON log_checkpoints FOR EACH ROW
        EXECUTE FUNCTION queue_root_log_leaf()`)
      .execute(db);
    await sql
      .raw(`CREATE FUNCTION refuse_root_log_change() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION '${refusal}: % on % refused', TG_OP, TG_TABLE_NAME; END $$`)
      .execute(db);
    for (const [name, table, event] of TRIGGERS) {
      await sql
        .raw(
          `CREATE TRIGGER ${name} BEFORE ${event} ON ${table} FOR EACH ROW EXECUTE FUNCTION refuse_root_log_change()`,
        )
        .execute(db);
    }
  } else {
    await sql
      .raw(`CREATE TRIGGER log_checkpoints_queue_root AFTER INSERT ON log_checkpoints
        BEGIN
          INSERT INTO root_log_queue (created_at, tenant_id, tree_size)
          VALUES (NEW.created_at, NEW.tenant_id, NEW.tree_size);
        END`)
      .execute(db);
    for (const [name, table, event] of TRIGGERS) {
      await sql
        .raw(
          `CREATE TRIGGER ${name} BEFORE ${event} ON ${table} BEGIN SELECT RAISE(ABORT, '${refusal}'); END`,
        )
        .execute(db);
    }
  }
  await sql`
    insert into root_log_queue (created_at, tenant_id, tree_size)
    select created_at, tenant_id, tree_size from log_checkpoints
  `.execute(db);
}

/** Triggers that refuse every change of their kind: [name, table, UPDATE | DELETE]. */
const TRIGGERS = [
  ['root_log_queue_no_update', 'root_log_queue', 'UPDATE'],
  ['root_log_leaves_no_update', 'root_log_leaves', 'UPDATE'],
  ['root_log_leaves_no_delete', 'root_log_leaves', 'DELETE'],
  ['root_log_tiles_no_update', 'root_log_tiles', 'UPDATE'],
  ['root_log_tiles_no_delete', 'root_log_tiles', 'DELETE'],
  ['root_log_checkpoints_no_update', 'root_log_checkpoints', 'UPDATE'],
  ['root_log_checkpoints_no_delete', 'root_log_checkpoints', 'DELETE'],
  ['root_log_cosignatures_no_update', 'root_log_cosignatures', 'UPDATE'],
  ['root_log_cosignatures_no_delete', 'root_log_cosignatures', 'DELETE'],
] as const;

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function down(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  for (const [name, table] of [...TRIGGERS, ['log_checkpoints_queue_root', 'log_checkpoints'] as const]) {
    await sql.raw(`DROP TRIGGER IF EXISTS ${name}${postgres ? ` ON ${table}` : ''}`).execute(db);
  }
  if (postgres) {
    await sql.raw('DROP FUNCTION IF EXISTS refuse_root_log_change()').execute(db);
    await sql.raw('DROP FUNCTION IF EXISTS queue_root_log_leaf()').execute(db);
  }
  for (const table of [
    'root_log_cosignatures',
    'root_log_checkpoints',
    'root_log_tiles',
    'root_log_leaves',
    'root_log_queue',
  ]) {
    await db.schema.dropTable(table).execute();
  }
}
