import {
  HASH_SIZE,
  proveRecord,
  proveTree,
  TileHashCache,
  TileTree,
  tileHashes,
} from '@scenario-scoring/tlog';
import type { Kysely } from 'kysely';
import { AppError } from '../errors/app-error.js';
import type { Database } from '../storage/database.js';
import {
  type StoredCheckpoint,
  selectCheckpoint,
  selectCheckpoints,
  selectLeafAndCheckpoint,
  selectTile,
  selectTiles,
} from './verifiable-log-store.js';

/** How long a client should wait before asking again for a record not sequenced yet. */
const RETRY_AFTER_SECONDS = 1;

/** An inclusion proof of a record, with the checkpoint whose tree it is in. */
export interface InclusionProof {
  cid: string;
  leafIndex: number;
  path: Uint8Array[];
  checkpoint: StoredCheckpoint;
}

/** A consistency proof between two checkpoints of one tenant's log. */
export interface ConsistencyProof {
  path: Uint8Array[];
  from: StoredCheckpoint;
  to: StoredCheckpoint;
}

/** The tenant's checkpoint of `treeSize` leaves (its latest when undefined), or 404 `checkpoint_not_found`. */
export async function findCheckpoint(
  db: Kysely<Database>,
  tenantId: string,
  treeSize?: number,
): Promise<StoredCheckpoint> {
  return (await selectCheckpoint(db, tenantId, treeSize)) ?? noCheckpoint(treeSize);
}

/** 404 `checkpoint_not_found`: the tenant has no checkpoint of `treeSize` leaves (or none at all). */
function noCheckpoint(treeSize: number | undefined): never {
  throw new AppError('checkpoint_not_found', {
    detail:
      treeSize === undefined
        ? 'This tenant has no signed checkpoint yet: its log is empty, or its first records are still being sequenced.'
        : `This tenant's log has no signed checkpoint of tree size ${treeSize}.`,
    headers: treeSize === undefined ? { 'Retry-After': String(RETRY_AFTER_SECONDS) } : undefined,
  });
}

/**
 * The audit path of the tenant's record `cid` in the tree of a signed checkpoint (the latest by default).
 * Unknown or another tenant's CID: 404; a record not sequenced yet: 409 with Retry-After, never a proof of
 * something else; a checkpoint whose tree is older than the record: 422 `tree_size_too_small`.
 */
export async function proveInclusion(
  db: Kysely<Database>,
  tenantId: string,
  cid: string,
  treeSize?: number,
): Promise<InclusionProof> {
  const { leafIndex, checkpoint: found } = await selectLeafAndCheckpoint(db, tenantId, cid, treeSize);
  if (leafIndex === undefined) {
    throw new AppError('not_found', { detail: `No log record with CID ${cid} exists for this API key.` });
  }
  if (leafIndex === null) {
    throw new AppError('log_record_not_sequenced', {
      detail: `The record ${cid} is logged but has no leaf index yet; ask again after Retry-After seconds.`,
      headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
    });
  }
  const checkpoint = found ?? noCheckpoint(treeSize);
  if (leafIndex >= checkpoint.treeSize) {
    throw new AppError('tree_size_too_small', {
      detail: `The record ${cid} is leaf ${leafIndex}, which a tree of ${checkpoint.treeSize} leaves does not hold.`,
    });
  }
  const path = await proveRecord(tenantTree(db, tenantId), checkpoint.treeSize, leafIndex);
  return { cid, leafIndex, path, checkpoint };
}

/** The proof that the tenant's checkpoint of `to` leaves extends the one of `from` leaves (from ≤ to). */
export async function proveConsistency(
  db: Kysely<Database>,
  tenantId: string,
  from: number,
  to: number,
): Promise<ConsistencyProof> {
  if (from > to) {
    throw new AppError('tree_size_too_small', {
      detail: `A consistency proof goes from a smaller tree to a larger one; to (${to}) is below from (${from}).`,
    });
  }
  // Two round trips: both checkpoints in one statement, then the proof's tiles in one. The tiles only once
  // both checkpoints exist: a `to` past the tree (any size up to 2^53 is valid input) reads no tile.
  const checkpoints = await selectCheckpoints(db, tenantId, [from, to]);
  const older = checkpoints.get(from) ?? noCheckpoint(from);
  const newer = checkpoints.get(to) ?? noCheckpoint(to);
  const path = await proveTree(tenantTree(db, tenantId), to, from);
  return { path, from: older, to: newer };
}

function tenantTree(db: Kysely<Database>, tenantId: string): TileTree {
  return new TileTree((level, index) => selectTile(db, tenantId, level, index), {
    readBatch: (tiles) => selectTiles(db, tenantId, tiles),
    shared: { cache: keptTilesOf(db), prefix: `${tenantId}\n` },
  });
}

/**
 * Tiles whose inner hashes are kept per process (see TileHashCache): at most 16 KiB each (a tile's 8 KiB of
 * hashes and at most as many inside it), so at most 16 MiB.
 */
const TILES_KEPT = 1024;
const keptTiles = new WeakMap<Kysely<Database>, TileHashCache>();

/** The tiles kept of the trees read through `db` (one cache per database, shared by its tenants). */
function keptTilesOf(db: Kysely<Database>): TileHashCache {
  let cache = keptTiles.get(db);
  if (cache === undefined) {
    cache = new TileHashCache(TILES_KEPT);
    keptTiles.set(db, cache);
  }
  return cache;
}

/** A stored tile of the tenant's tree: its first `width` hashes (all stored by default), or 404. */
export async function findTile(
  db: Kysely<Database>,
  tenantId: string,
  level: number,
  index: number,
  width?: number,
): Promise<{ level: number; index: number; hashes: Uint8Array[] }> {
  const stored = await selectTile(db, tenantId, level, index);
  const storedWidth = (stored?.length ?? 0) / HASH_SIZE;
  if (stored === undefined || (width !== undefined && width > storedWidth)) {
    throw new AppError('not_found', {
      detail: `This tenant's log has no tile ${level}/${index}${width === undefined ? '' : ` of width ${width}`} yet.`,
    });
  }
  return { level, index, hashes: tileHashes(stored, 0, width ?? storedWidth) };
}
