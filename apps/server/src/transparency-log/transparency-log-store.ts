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

/** Up to `limit` of the tenant's unsequenced records, oldest first (ties by CID, so the order is stable). */
export async function selectPendingRecords(
  db: Kysely<Database>,
  tenantId: string,
  limit: number,
): Promise<PendingRecord[]> {
  return db
    .selectFrom('log_records')
    .select(['cid', 'bytes'])
    .where('tenant_id', '=', tenantId)
    .where('leaf_index', 'is', null)
    .orderBy('created_at')
    .orderBy('cid')
    .limit(limit)
    .execute();
}

/**
 * Gives `cids` the leaf indexes `firstIndex, firstIndex + 1, …`, in multi-row UPDATEs. No `leaf_index is
 * null` condition: on SQLite it would make the planner scan every waiting record per row; a record that
 * already has an index cannot be updated anyway (the migration's trigger refuses it, failing the batch).
 */
export async function assignLeafIndexes(
  trx: Transaction<Database>,
  tenantId: string,
  cids: readonly string[],
  firstIndex: number,
): Promise<void> {
  const indexed = cids.map((cid, offset) => ({ cid, index: firstIndex + offset }));
  for (const chunk of chunks(indexed, ROWS_PER_STATEMENT)) {
    const values = sql.join(chunk.map((row) => sql`(${row.cid}, cast(${row.index} as bigint))`));
    const result = await sql`
      with assigned(cid, leaf_index) as (values ${values})
      update log_records set leaf_index = assigned.leaf_index from assigned
      where log_records.tenant_id = ${tenantId} and log_records.cid = assigned.cid
    `.execute(trx);
    if (Number(result.numAffectedRows) !== chunk.length) {
      throw new Error(
        `sequencing ${tenantId}: ${chunk.length - Number(result.numAffectedRows)} records changed under the sequencer`,
      );
    }
  }
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
