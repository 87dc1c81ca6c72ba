import { type NewTile, TILE_WIDTH, type TileCoordinates } from '@scenario-scoring/tlog';
import { type Kysely, sql, type Transaction } from 'kysely';
import { chunks } from '../storage/chunks.js';
import type { Database } from '../storage/database.js';

/** Rows per multi-row statement: at most 5 parameters a row, far below both databases' bounds. */
const ROWS_PER_STATEMENT = 1000;

/** A signed checkpoint as stored. */
export interface StoredCheckpoint {
  treeSize: number;
  rootHash: Uint8Array;
  note: string;
}

/** The widest stored tile (level, index) of the tenant's tree, or undefined. */
export async function selectTile(
  db: Kysely<Database>,
  tenantId: string,
  level: number,
  index: number,
): Promise<Uint8Array | undefined> {
  return (await selectTiles(db, tenantId, [{ level, index }]))[0];
}

/**
 * The widest stored tile at each of `tiles` in the tenant's tree (undefined where none is), in one
 * statement: a proof's tiles in one round trip instead of one each (see TileTree).
 */
export function selectTiles(
  db: Kysely<Database>,
  tenantId: string,
  tiles: readonly TileCoordinates[],
): Promise<Array<Uint8Array | undefined>> {
  return widestTiles(db, 'log_tiles', tenantId, tiles);
}

/**
 * For each of `tiles`, the hashes of the widest row of `table` there (the tenant's in `log_tiles`), in one
 * statement: a derived table per tile, each the primary-key probe selectTile makes (`order by width desc
 * limit 1`), joined by UNION ALL. The slot is a literal, so the statement's text depends only on how many
 * tiles it reads (a few shapes, each prepared once).
 */
export async function widestTiles(
  db: Kysely<Database>,
  table: 'log_tiles' | 'root_log_tiles',
  tenantId: string | undefined,
  tiles: readonly TileCoordinates[],
): Promise<Array<Uint8Array | undefined>> {
  const found: Array<Uint8Array | undefined> = tiles.map(() => undefined);
  if (tiles.length === 0) return found;
  const tenant = tenantId === undefined ? sql`` : sql`tenant_id = ${tenantId} and `;
  const parts = tiles.map(
    ({ level, index }, slot) =>
      sql`select * from (select ${sql.lit(slot)} as slot, hashes from ${sql.table(table)}
        where ${tenant}level = ${level} and tile_index = ${index}
        order by width desc limit 1) as ${sql.ref(`tile_${slot}`)}`,
  );
  const { rows } = await sql<{ slot: number | string; hashes: Uint8Array }>`${sql.join(
    parts,
    sql` union all `,
  )}`.execute(db);
  for (const row of rows) found[Number(row.slot)] = row.hashes;
  return found;
}

/**
 * Tenants with records waiting for their leaves. Found one after the other, each the least tenant after
 * the last in the queue's key (an index probe per tenant), not by reading every queued row: a
 * `select distinct` over a large backlog would hold the one SQLite connection for every round.
 */
export async function selectTenantsWithPendingRecords(db: Kysely<Database>): Promise<string[]> {
  const { rows } = await sql<{ tenant_id: string }>`
    with recursive pending(tenant_id) as (
      select (select min(q.tenant_id) from log_leaf_queue as q)
      union all
      select (select min(q.tenant_id) from log_leaf_queue as q where q.tenant_id > p.tenant_id)
      from pending as p where p.tenant_id is not null
    )
    select tenant_id from pending where tenant_id is not null
  `.execute(db);
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

/**
 * The tenant's tree size, read from the tree itself: its last level-0 tile (the widest at the highest
 * index) holds leaves `index × 256 …`, so the size is `index × 256 + width`. One probe of the tiles'
 * primary key, backwards. Leaves, tiles and the checkpoint are written in one transaction (the sequencer),
 * so this is also one more than the highest leaf index (migration 0023 dropped the leaf-index index that
 * used to give it).
 */
export async function selectTreeSize(db: Kysely<Database>, tenantId: string): Promise<number> {
  const row = await lastLeafTileQuery(db, tenantId).executeTakeFirst();
  return row === undefined ? 0 : Number(row.tile_index) * TILE_WIDTH + Number(row.width);
}

/** selectTreeSize's query, for its query-plan test. */
export function lastLeafTileQuery(db: Kysely<Database>, tenantId: string) {
  return db
    .selectFrom('log_tiles')
    .select(['tile_index', 'width'])
    .where('tenant_id', '=', tenantId)
    .where('level', '=', 0)
    .orderBy('tile_index', 'desc')
    .orderBy('width', 'desc')
    .limit(1);
}

/**
 * Gives up to `limit` of the tenant's queued records, oldest first (ties by CID, so the order is stable),
 * the leaf indexes `firstIndex, firstIndex + 1, …`: inserts their `log_leaves` rows and deletes their queue
 * rows, and answers their leaf hashes in leaf order. Set-based, so no CID travels back to the database as
 * a parameter; the caller holds the tenant's sequencing lock.
 *
 * PostgreSQL: one statement (the queue rows deleted, numbered and inserted as leaves from one snapshot), so
 * a record committed meanwhile, even with an earlier created_at, is neither taken nor lost: it stays queued.
 * SQLite: the transaction holds the only write lock, so nothing is queued between the statements; the
 * batch's queue rows are deleted as a range of the queue's primary key.
 */
export async function appendQueuedLeaves(
  trx: Transaction<Database>,
  kind: 'sqlite' | 'postgres',
  tenantId: string,
  firstIndex: number,
  limit: number,
): Promise<Uint8Array[]> {
  if (kind === 'postgres') {
    const { rows } = await sql<{ leaf_index: string | number; leaf_hash: Uint8Array }>`
      with batch as (
        select created_at, cid from log_leaf_queue where tenant_id = ${tenantId}
        order by created_at, cid limit ${limit}
      ), claimed as (
        delete from log_leaf_queue queued using batch
        where queued.tenant_id = ${tenantId} and queued.created_at = batch.created_at and queued.cid = batch.cid
        returning queued.created_at, queued.cid, queued.leaf_hash
      ), numbered as (
        select created_at, cid, leaf_hash,
          cast(${firstIndex} as bigint) + row_number() over (order by created_at, cid) - 1 as leaf_index
        from claimed
      ), appended as (
        insert into log_leaves (tenant_id, created_at, cid, leaf_index)
        select ${tenantId}, created_at, cid, leaf_index from numbered
      )
      select leaf_index, leaf_hash from numbered
    `.execute(trx);
    // The statement gives no order: place each hash at its leaf index.
    const hashes = new Array<Uint8Array>(rows.length);
    for (const row of rows) {
      const offset = Number(row.leaf_index) - firstIndex;
      if (!(offset >= 0 && offset < rows.length) || hashes[offset] !== undefined) {
        throw new Error(`sequencing ${tenantId}: leaf index ${row.leaf_index} outside the batch`);
      }
      hashes[offset] = row.leaf_hash;
    }
    return hashes;
  }
  const appended = await sql`
    insert into log_leaves (tenant_id, created_at, cid, leaf_index)
    select tenant_id, created_at, cid, ${firstIndex} + row_number() over (order by created_at, cid) - 1
    from (
      select tenant_id, created_at, cid from log_leaf_queue where tenant_id = ${tenantId}
      order by created_at, cid limit ${limit}
    )
  `.execute(trx);
  const count = Number(appended.numAffectedRows ?? 0);
  if (count === 0) return [];
  const last = await trx
    .selectFrom('log_leaf_queue')
    .select(['created_at', 'cid'])
    .where('tenant_id', '=', tenantId)
    .orderBy('created_at')
    .orderBy('cid')
    .limit(1)
    .offset(count - 1)
    .executeTakeFirstOrThrow();
  const through = sql<boolean>`(created_at, cid) <= (${last.created_at}, ${last.cid})`;
  const rows = await trx
    .selectFrom('log_leaf_queue')
    .select('leaf_hash')
    .where('tenant_id', '=', tenantId)
    .where(through)
    .orderBy('created_at')
    .orderBy('cid')
    .execute();
  if (rows.length !== count) {
    throw new Error(`sequencing ${tenantId}: ${count} leaves appended but ${rows.length} queued hashes read`);
  }
  await trx.deleteFrom('log_leaf_queue').where('tenant_id', '=', tenantId).where(through).execute();
  return rows.map((row) => row.leaf_hash);
}

/** A record waiting for its leaf, as the SQLite sequencer reads it before its write transaction. */
export interface QueuedLeaf {
  createdAt: string;
  cid: string;
  leafHash: Uint8Array;
}

/**
 * Thrown inside a sequencing transaction when the queue or the tree is not what was read before it: the
 * transaction rolls back, and the sequencer falls back to reading and appending in one transaction.
 */
export class LogMovedError extends Error {
  override readonly name = 'LogMovedError';
}

/** Up to `limit` of the tenant's queued records, in the order they are given leaves (created_at, CID). */
export async function selectQueuedLeaves(
  db: Kysely<Database>,
  tenantId: string,
  limit: number,
): Promise<QueuedLeaf[]> {
  const rows = await db
    .selectFrom('log_leaf_queue')
    .select(['created_at', 'cid', 'leaf_hash'])
    .where('tenant_id', '=', tenantId)
    .orderBy('created_at')
    .orderBy('cid')
    .limit(limit)
    .execute();
  return rows.map((row) => ({ createdAt: row.created_at, cid: row.cid, leafHash: row.leaf_hash }));
}

/**
 * SQLite: gives exactly the records `leaves` (read by selectQueuedLeaves before this transaction, in queue
 * order) the leaf indexes `firstIndex, firstIndex + 1, …` in their order: inserts their `log_leaves` rows
 * from their queue rows and deletes those. The caller has checked, in this transaction, that the tree did
 * not grow since it read them, so none of them has left the queue (only sequencing removes queue rows).
 *
 * When the queue up to the last of them holds as many rows as were read, nothing was queued among them
 * since: they are appended and deleted as that range of the queue's key, as one statement each. Otherwise
 * (a record with an earlier created_at committed since) they are picked out by key, the keys travelling as
 * one JSON parameter, and the records queued since are left for the next batch; `cross join` fixes that
 * loop order (SQLite keeps it as written): the listed keys outside, each a primary-key lookup in the
 * queue. Left to its planner, SQLite scans the tenant's queue outside and the JSON inside: quadratic.
 * Throws LogMovedError (so the caller's transaction rolls back) unless every one of them was still queued.
 */
export async function appendListedLeaves(
  trx: Transaction<Database>,
  tenantId: string,
  firstIndex: number,
  leaves: readonly QueuedLeaf[],
): Promise<void> {
  const last = leaves.at(-1);
  if (last === undefined) return;
  const expect = (result: { numAffectedRows?: bigint }) => {
    if (Number(result.numAffectedRows ?? 0) !== leaves.length) {
      throw new LogMovedError(`sequencing ${tenantId}: a listed record is no longer queued`);
    }
  };
  const through = sql<boolean>`(created_at, cid) <= (${last.createdAt}, ${last.cid})`;
  const { rows } = await sql<{ queued: number | bigint }>`
    select count(*) as queued from log_leaf_queue where tenant_id = ${tenantId} and ${through}
  `.execute(trx);
  if (Number(rows[0]?.queued) === leaves.length) {
    expect(
      await sql`
        insert into log_leaves (tenant_id, created_at, cid, leaf_index)
        select tenant_id, created_at, cid, ${firstIndex} + row_number() over (order by created_at, cid) - 1
        from log_leaf_queue where tenant_id = ${tenantId} and ${through}
      `.execute(trx),
    );
    expect(await sql`delete from log_leaf_queue where tenant_id = ${tenantId} and ${through}`.execute(trx));
    return;
  }
  const keys = JSON.stringify(leaves.map((leaf) => [leaf.createdAt, leaf.cid]));
  expect(await listedLeavesInsert(tenantId, firstIndex, keys).execute(trx));
  expect(
    await sql`
      delete from log_leaf_queue where tenant_id = ${tenantId}
        and (created_at, cid) in (select value ->> 0, value ->> 1 from json_each(${keys}))
    `.execute(trx),
  );
}

/** appendListedLeaves's INSERT, for its query-plan test: `keys` is the JSON array of [created_at, cid]. */
export function listedLeavesInsert(tenantId: string, firstIndex: number, keys: string) {
  return sql`
    insert into log_leaves (tenant_id, created_at, cid, leaf_index)
    select queued.tenant_id, queued.created_at, queued.cid, ${firstIndex} + listed.key
    from json_each(${keys}) listed
    cross join log_leaf_queue queued
    where queued.tenant_id = ${tenantId} and queued.created_at = listed.value ->> 0 and queued.cid = listed.value ->> 1
  `;
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
          hashes: Buffer.from(tile.hashes.buffer, tile.hashes.byteOffset, tile.hashes.byteLength),
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
  return row && storedCheckpoint(row);
}

/** A `log_checkpoints` row as a StoredCheckpoint (its tree size a number on both databases). */
function storedCheckpoint(row: {
  tree_size: number | string;
  root_hash: Uint8Array;
  note: string;
}): StoredCheckpoint {
  return { treeSize: Number(row.tree_size), rootHash: row.root_hash, note: row.note };
}

/** The tenant's checkpoints of the tree sizes `sizes` that it has, in one statement, by tree size. */
export async function selectCheckpoints(
  db: Kysely<Database>,
  tenantId: string,
  sizes: readonly number[],
): Promise<Map<number, StoredCheckpoint>> {
  const rows = await db
    .selectFrom('log_checkpoints')
    .select(['tree_size', 'root_hash', 'note'])
    .where('tenant_id', '=', tenantId)
    .where('tree_size', 'in', [...new Set(sizes)])
    .execute();
  return new Map(rows.map((row) => [Number(row.tree_size), storedCheckpoint(row)]));
}

/**
 * In one statement (an inclusion proof's first round trip, its tiles being the second): the leaf index of
 * the tenant's record `cid` (undefined when the tenant has no such record, null while it waits for its
 * leaf; found by primary key in `log_records` and then in `log_leaves`) and the tenant's checkpoint of
 * `treeSize` leaves, or its latest.
 */
export async function selectLeafAndCheckpoint(
  db: Kysely<Database>,
  tenantId: string,
  cid: string,
  treeSize?: number,
): Promise<{ leafIndex: number | null | undefined; checkpoint: StoredCheckpoint | undefined }> {
  const { rows } = await leafAndCheckpointQuery(tenantId, cid, treeSize).execute(db);
  const row = rows[0];
  const leaf = row?.leaf_index ?? null;
  return {
    leafIndex: leaf === null ? undefined : Number(leaf) < 0 ? null : Number(leaf),
    checkpoint:
      row?.tree_size === null || row?.tree_size === undefined
        ? undefined
        : storedCheckpoint({
            tree_size: row.tree_size,
            root_hash: row.root_hash as Uint8Array,
            note: row.note as string,
          }),
  };
}

/**
 * selectLeafAndCheckpoint's statement. The leaf is a subquery of the record's row, so that both databases
 * look it up by `log_leaves`' whole primary key (tenant, created_at, CID): as a join, PostgreSQL (before
 * any ANALYZE) probed `log_leaves` with the tenant and the CID alone, which reads every leaf of the tenant.
 * `leaf_index` is -1 for a record without a leaf and null for no record.
 */
export function leafAndCheckpointQuery(tenantId: string, cid: string, treeSize?: number) {
  const size = treeSize === undefined ? sql`` : sql`and tree_size = ${treeSize} `;
  return sql<{
    leaf_index: number | string | null;
    tree_size: number | string | null;
    root_hash: Uint8Array | null;
    note: string | null;
  }>`
    select record.leaf_index, checkpoint.tree_size, checkpoint.root_hash, checkpoint.note
    from (
      select (
        select coalesce((
          select log_leaves.leaf_index from log_leaves
          where log_leaves.tenant_id = log_records.tenant_id
            and log_leaves.created_at = log_records.created_at and log_leaves.cid = log_records.cid
        ), -1)
        from log_records
        where log_records.tenant_id = ${tenantId} and log_records.cid = ${cid}
      ) as leaf_index
    ) as record
    left join (
      select tree_size, root_hash, note from log_checkpoints
      where tenant_id = ${tenantId} ${size}order by tree_size desc limit 1
    ) as checkpoint on 1 = 1
  `;
}

/** The tree sizes of the tenant's stored checkpoints, smallest first (read only when a self-check failed). */
export async function selectCheckpointSizes(db: Kysely<Database>, tenantId: string): Promise<number[]> {
  const rows = await db
    .selectFrom('log_checkpoints')
    .select('tree_size')
    .where('tenant_id', '=', tenantId)
    .orderBy('tree_size')
    .execute();
  return rows.map((row) => Number(row.tree_size));
}

/** A self-check fault as stored: which tenant, when, and which leaves. */
export interface StoredLogFault {
  tenantId: string;
  detectedAt: string;
  treeSize: number;
  firstIndex: number;
  endIndex: number;
  reason: string;
}

/** Stores a fault the self-check found (a second one of the same tenant and instant is the same fault). */
export async function insertLogFault(db: Kysely<Database>, fault: StoredLogFault): Promise<void> {
  await db
    .insertInto('log_faults')
    .values({
      tenant_id: fault.tenantId,
      detected_at: fault.detectedAt,
      tree_size: fault.treeSize,
      first_index: fault.firstIndex,
      end_index: fault.endIndex,
      reason: fault.reason,
    })
    .onConflict((conflict) => conflict.doNothing())
    .execute();
}

/** The faults no operator has cleared yet (all tenants, or one), oldest first. */
export async function selectOpenLogFaults(
  db: Kysely<Database>,
  tenantId?: string,
): Promise<StoredLogFault[]> {
  let query = db
    .selectFrom('log_faults')
    .select(['tenant_id', 'detected_at', 'tree_size', 'first_index', 'end_index', 'reason'])
    .where('cleared_at', 'is', null);
  if (tenantId !== undefined) query = query.where('tenant_id', '=', tenantId);
  const rows = await query.orderBy('detected_at').orderBy('tenant_id').execute();
  return rows.map((row) => ({
    tenantId: row.tenant_id,
    detectedAt: row.detected_at,
    treeSize: Number(row.tree_size),
    firstIndex: Number(row.first_index),
    endIndex: Number(row.end_index),
    reason: row.reason,
  }));
}

/** Marks the tenant's open faults cleared at `clearedAt`; answers how many there were. */
export async function clearLogFaults(
  db: Kysely<Database>,
  tenantId: string,
  clearedAt: Date,
): Promise<number> {
  const result = await db
    .updateTable('log_faults')
    .set({ cleared_at: clearedAt.toISOString() })
    .where('tenant_id', '=', tenantId)
    .where('cleared_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
