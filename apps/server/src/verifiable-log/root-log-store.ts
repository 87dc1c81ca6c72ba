import type { NewTile, TileCoordinates } from '@scenario-scoring/tlog';
import { type Kysely, sql, type Transaction } from 'kysely';
import { chunks } from '../storage/chunks.js';
import type { Database } from '../storage/database.js';
import { type StoredCheckpoint, widestTiles } from './verifiable-log-store.js';

/** Rows per multi-row statement. */
const ROWS_PER_STATEMENT = 1000;

/** A tenant checkpoint waiting for its root leaf: its queue key and its signed note. */
export interface QueuedTenantCheckpoint {
  createdAt: string;
  tenantId: string;
  treeSize: number;
  note: string;
}

/** A root cosignature as stored: the witness's key name and its signature line. */
export interface StoredCosignature {
  witness: string;
  line: string;
}

/**
 * On PostgreSQL, takes the root log's sequencing lock for the transaction, or answers false when another
 * instance holds it; SQLite has one writer, so always true there.
 */
export async function lockRootLog(trx: Transaction<Database>, kind: 'sqlite' | 'postgres'): Promise<boolean> {
  if (kind === 'sqlite') return true;
  const { rows } = await sql<{ locked: boolean }>`
    select pg_try_advisory_xact_lock(hashtext('scenario-scoring/root-log'), 0) as locked
  `.execute(trx);
  return rows[0]?.locked === true;
}

/** The root tree's size: one more than its highest leaf index. */
export async function selectRootTreeSize(db: Kysely<Database>): Promise<number> {
  const row = await db
    .selectFrom('root_log_leaves')
    .select((eb) => eb.fn.max('leaf_index').as('last'))
    .executeTakeFirst();
  return row?.last === null || row?.last === undefined ? 0 : Number(row.last) + 1;
}

/** Up to `limit` queued tenant checkpoints, oldest first (then by tenant and size), with their notes. */
export async function selectQueuedTenantCheckpoints(
  db: Kysely<Database>,
  limit: number,
): Promise<QueuedTenantCheckpoint[]> {
  const rows = await db
    .selectFrom('root_log_queue as q')
    .innerJoin('log_checkpoints as c', (join) =>
      join.onRef('c.tenant_id', '=', 'q.tenant_id').onRef('c.tree_size', '=', 'q.tree_size'),
    )
    .select(['q.created_at', 'q.tenant_id', 'q.tree_size', 'c.note'])
    .orderBy('q.created_at')
    .orderBy('q.tenant_id')
    .orderBy('q.tree_size')
    .limit(limit)
    .execute();
  return rows.map((row) => ({
    createdAt: row.created_at,
    tenantId: row.tenant_id,
    treeSize: Number(row.tree_size),
    note: row.note,
  }));
}

/** Appends `queued` as root leaves `firstIndex, …` and removes them from the queue (the caller holds the lock). */
export async function appendRootLeaves(
  trx: Transaction<Database>,
  firstIndex: number,
  queued: readonly QueuedTenantCheckpoint[],
): Promise<void> {
  let next = firstIndex;
  for (const chunk of chunks(queued, ROWS_PER_STATEMENT)) {
    await trx
      .insertInto('root_log_leaves')
      .values(
        chunk.map((leaf) => ({
          leaf_index: next++,
          tenant_id: leaf.tenantId,
          tree_size: leaf.treeSize,
        })),
      )
      .execute();
  }
  for (const leaf of queued) {
    await trx
      .deleteFrom('root_log_queue')
      .where('created_at', '=', leaf.createdAt)
      .where('tenant_id', '=', leaf.tenantId)
      .where('tree_size', '=', leaf.treeSize)
      .execute();
  }
}

/** The widest stored root tile (level, index), or undefined. */
export async function selectRootTile(
  db: Kysely<Database>,
  level: number,
  index: number,
): Promise<Uint8Array | undefined> {
  return (await selectRootTiles(db, [{ level, index }]))[0];
}

/** The widest stored root tile at each of `tiles` (undefined where none is), in one statement. */
export function selectRootTiles(
  db: Kysely<Database>,
  tiles: readonly TileCoordinates[],
): Promise<Array<Uint8Array | undefined>> {
  return widestTiles(db, 'root_log_tiles', undefined, tiles);
}

/** Stores new root tiles; each (level, index, width) is written once. */
export async function insertRootTiles(trx: Transaction<Database>, tiles: readonly NewTile[]): Promise<void> {
  for (const chunk of chunks(tiles, ROWS_PER_STATEMENT)) {
    await trx
      .insertInto('root_log_tiles')
      .values(
        chunk.map((tile) => ({
          level: tile.level,
          tile_index: tile.index,
          width: tile.width,
          hashes: Buffer.from(tile.hashes.buffer, tile.hashes.byteOffset, tile.hashes.byteLength),
        })),
      )
      .execute();
  }
}

/** Stores a signed root checkpoint. */
export async function insertRootCheckpoint(
  trx: Transaction<Database>,
  checkpoint: StoredCheckpoint,
  createdAt: Date,
): Promise<void> {
  await trx
    .insertInto('root_log_checkpoints')
    .values({
      tree_size: checkpoint.treeSize,
      root_hash: checkpoint.rootHash,
      note: checkpoint.note,
      created_at: createdAt.toISOString(),
    })
    .execute();
}

/** The root checkpoint of `treeSize` leaves, or the latest when undefined. */
export async function selectRootCheckpoint(
  db: Kysely<Database>,
  treeSize?: number,
): Promise<StoredCheckpoint | undefined> {
  let query = db.selectFrom('root_log_checkpoints').select(['tree_size', 'root_hash', 'note']);
  query =
    treeSize === undefined
      ? query.orderBy('tree_size', 'desc').limit(1)
      : query.where('tree_size', '=', treeSize);
  const row = await query.executeTakeFirst();
  return row && { treeSize: Number(row.tree_size), rootHash: row.root_hash, note: row.note };
}

/** The latest root checkpoints, newest first, at most `limit`. */
export async function selectRecentRootCheckpoints(
  db: Kysely<Database>,
  limit: number,
): Promise<StoredCheckpoint[]> {
  const rows = await db
    .selectFrom('root_log_checkpoints')
    .select(['tree_size', 'root_hash', 'note'])
    .orderBy('tree_size', 'desc')
    .limit(limit)
    .execute();
  return rows.map((row) => ({ treeSize: Number(row.tree_size), rootHash: row.root_hash, note: row.note }));
}

/** Stores a witness's cosignature line of the root checkpoint of `treeSize` (kept when one is stored). */
export async function insertCosignature(
  db: Kysely<Database>,
  treeSize: number,
  cosignature: StoredCosignature,
  createdAt: Date,
): Promise<void> {
  await db
    .insertInto('root_log_cosignatures')
    .values({ tree_size: treeSize, ...cosignature, created_at: createdAt.toISOString() })
    .onConflict((oc) => oc.columns(['tree_size', 'witness']).doNothing())
    .execute();
}

/** The cosignatures stored for the root checkpoint of `treeSize`, by witness name. */
export async function selectCosignatures(
  db: Kysely<Database>,
  treeSize: number,
): Promise<StoredCosignature[]> {
  return db
    .selectFrom('root_log_cosignatures')
    .select(['witness', 'line'])
    .where('tree_size', '=', treeSize)
    .orderBy('witness')
    .execute();
}

/** The root leaf index of the tenant's checkpoint of `treeSize`; undefined while it has none. */
export async function selectRootLeafIndex(
  db: Kysely<Database>,
  tenantId: string,
  treeSize: number,
): Promise<number | undefined> {
  const row = await db
    .selectFrom('root_log_leaves')
    .select('leaf_index')
    .where('tenant_id', '=', tenantId)
    .where('tree_size', '=', treeSize)
    .executeTakeFirst();
  return row === undefined ? undefined : Number(row.leaf_index);
}
