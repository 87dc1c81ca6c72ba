import { type Kysely, sql, type Transaction } from 'kysely';
import { chunks } from '../storage/chunks.js';
import type { Database } from '../storage/database.js';
import type { NewTile } from './tile-appender.js';

/** Rows per multi-row statement: at most 5 parameters a row, far below both databases' bounds. */
const ROWS_PER_STATEMENT = 1000;

/** A signed checkpoint as stored. */
export interface StoredCheckpoint {
  treeSize: number;
  rootHash: Uint8Array;
  note: string;
}

/** A record waiting for its leaf index. */
export interface PendingRecord {
  cid: string;
  bytes: Uint8Array;
}

/** The widest stored tile (level, index) of the tenant's tree, or undefined. */
export async function selectTile(
  db: Kysely<Database>,
  tenantId: string,
  level: number,
  index: number,
): Promise<Uint8Array | undefined> {
  const row = await db
    .selectFrom('log_tiles')
    .select('hashes')
    .where('tenant_id', '=', tenantId)
    .where('level', '=', level)
    .where('tile_index', '=', index)
    .orderBy('width', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row?.hashes;
}

/** Tenants with records that have no leaf index yet (read from the partial index of those only). */
export async function selectTenantsWithPendingRecords(db: Kysely<Database>): Promise<string[]> {
  const rows = await db
    .selectFrom('log_records')
    .select('tenant_id')
    .distinct()
    .where('leaf_index', 'is', null)
    .execute();
  return rows.map((row) => row.tenant_id);
}

/**
 * On PostgreSQL, takes the tenant's sequencing lock for the transaction, or answers false when another
 * instance holds it; SQLite has one writer, so always true there.
 */
export async function lockTenantLog(
  trx: Transaction<Database>,
  kind: 'sqlite' | 'postgres',
  tenantId: string,
): Promise<boolean> {
  if (kind === 'sqlite') return true;
  const { rows } = await sql<{ locked: boolean }>`
    select pg_try_advisory_xact_lock(hashtext('scenario-scoring/log-sequencer'), hashtext(${tenantId})) as locked
  `.execute(trx);
  return rows[0]?.locked === true;
}

/** The tenant's tree size: one more than its highest leaf index (the records are the source of truth). */
export async function selectTreeSize(db: Kysely<Database>, tenantId: string): Promise<number> {
  const row = await db
    .selectFrom('log_records')
    .select((eb) => eb.fn.max('leaf_index').as('last'))
    .where('tenant_id', '=', tenantId)
    .where('leaf_index', 'is not', null)
    .executeTakeFirst();
  return row?.last === null || row?.last === undefined ? 0 : Number(row.last) + 1;
}

/**
 * Gives up to `limit` of the tenant's unsequenced records, oldest first (ties by CID, so the order is
 * stable), the leaf indexes `firstIndex, firstIndex + 1, …` and answers them in that order. One statement:
 * the batch is read from the partial index of waiting records, numbered, updated and returned, so no record
 * is looked up twice and no CID goes back to the database as a parameter. The caller holds the tenant's
 * sequencing lock; an already sequenced record cannot be renumbered anyway (the migration's trigger refuses
 * it, failing the batch).
 */
export async function claimPendingRecords(
  trx: Transaction<Database>,
  kind: 'sqlite' | 'postgres',
  tenantId: string,
  firstIndex: number,
  limit: number,
): Promise<PendingRecord[]> {
  // SQLite joins on the rowid the partial index already holds; PostgreSQL on the primary key.
  const key = kind === 'sqlite' ? sql`rowid` : sql`cid`;
  // SQLite's planner prefers the (tenant_id, leaf_index) index, where waiting records are NULLs, then
  // reads every row and sorts; the partial index holds exactly the waiting records in batch order.
  const waiting =
    kind === 'sqlite' ? sql`log_records indexed by log_records_unsequenced_idx` : sql`log_records`;
  const { rows } = await sql<{ leaf_index: number | string | bigint; cid: string; bytes: Uint8Array }>`
    with batch as (
      select ${key} as record_key, created_at, cid from ${waiting}
      where tenant_id = ${tenantId} and leaf_index is null
      order by created_at, cid
      limit ${limit}
    ), numbered as (
      select record_key, cast(${firstIndex} as bigint) + row_number() over (order by created_at, cid) - 1 as leaf_index
      from batch
    )
    update log_records set leaf_index = numbered.leaf_index from numbered
    where log_records.tenant_id = ${tenantId} and log_records.${key} = numbered.record_key
    returning log_records.leaf_index, log_records.cid, log_records.bytes
  `.execute(trx);
  // RETURNING gives no order: place each record at its leaf index.
  const records = new Array<PendingRecord>(rows.length);
  for (const row of rows) {
    const offset = Number(row.leaf_index) - firstIndex;
    if (!(offset >= 0 && offset < rows.length) || records[offset] !== undefined) {
      throw new Error(`sequencing ${tenantId}: leaf index ${row.leaf_index} outside the batch`);
    }
    records[offset] = { cid: row.cid, bytes: row.bytes };
  }
  return records;
}

/** Stores new tiles; each (level, index, width) is written once. */
export async function insertTiles(
  trx: Transaction<Database>,
  tenantId: string,
  tiles: readonly NewTile[],
): Promise<void> {
  for (const chunk of chunks(tiles, ROWS_PER_STATEMENT)) {
    await trx
      .insertInto('log_tiles')
      .values(
        chunk.map((tile) => ({
          tenant_id: tenantId,
          level: tile.level,
          tile_index: tile.index,
          width: tile.width,
          hashes: tile.hashes,
        })),
      )
      .execute();
  }
}

/** Stores a signed checkpoint. */
export async function insertCheckpoint(
  trx: Transaction<Database>,
  tenantId: string,
  checkpoint: StoredCheckpoint,
  createdAt: Date,
): Promise<void> {
  await trx
    .insertInto('log_checkpoints')
    .values({
      tenant_id: tenantId,
      tree_size: checkpoint.treeSize,
      root_hash: checkpoint.rootHash,
      note: checkpoint.note,
      created_at: createdAt.toISOString(),
    })
    .execute();
}

/** The tenant's checkpoint of `treeSize` leaves, or its latest one when `treeSize` is undefined. */
export async function selectCheckpoint(
  db: Kysely<Database>,
  tenantId: string,
  treeSize?: number,
): Promise<StoredCheckpoint | undefined> {
  let query = db
    .selectFrom('log_checkpoints')
    .select(['tree_size', 'root_hash', 'note'])
    .where('tenant_id', '=', tenantId);
  query =
    treeSize === undefined
      ? query.orderBy('tree_size', 'desc').limit(1)
      : query.where('tree_size', '=', treeSize);
  const row = await query.executeTakeFirst();
  return row && { treeSize: Number(row.tree_size), rootHash: row.root_hash, note: row.note };
}

/** The leaf index of the tenant's record `cid`: a number, null while not sequenced, undefined when no such record. */
export async function selectLeafIndex(
  db: Kysely<Database>,
  tenantId: string,
  cid: string,
): Promise<number | null | undefined> {
  const row = await db
    .selectFrom('log_records')
    .select('leaf_index')
    .where('tenant_id', '=', tenantId)
    .where('cid', '=', cid)
    .executeTakeFirst();
  if (row === undefined) return undefined;
  return row.leaf_index === null ? null : Number(row.leaf_index);
}
