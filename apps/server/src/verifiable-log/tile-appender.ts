import { HASH_BYTES, perfectRoot } from './merkle-hash.js';
import { TILE_WIDTH, type TileTree, TreeStorageError } from './tile-tree.js';

/** A tile to store: `width` hashes of tile level `level` from position `index · 256`. */
export interface NewTile {
  level: number;
  index: number;
  width: number;
  hashes: Uint8Array;
}

/**
 * The tiles that appending `leafHashes` to a tree of `size` leaves creates: at each tile level, the
 * partial tile on the right edge gets the new hashes, every tile that fills up gives its root to the level
 * above. Existing tiles are never changed: a wider copy of a partial tile is a new row (its own width).
 */
export async function tilesForAppend(
  tree: TileTree,
  size: number,
  leafHashes: readonly Uint8Array[],
): Promise<NewTile[]> {
  const tiles: NewTile[] = [];
  let appended: readonly Uint8Array[] = leafHashes;
  let count = size; // complete hashes at this tile level before the append
  for (let level = 0; appended.length > 0; level++) {
    const firstTile = Math.floor(count / TILE_WIDTH);
    const kept = count % TILE_WIDTH;
    const entries: Uint8Array[] = [];
    if (kept > 0) {
      const stored = await tree.tile(level, firstTile);
      if (stored === undefined || stored.length < kept * HASH_BYTES) {
        throw new TreeStorageError(`tile ${level}/${firstTile} is missing or shorter than ${kept} hashes`);
      }
      for (let i = 0; i < kept; i++) entries.push(stored.subarray(i * HASH_BYTES, (i + 1) * HASH_BYTES));
    }
    entries.push(...appended);
    const full: Uint8Array[] = [];
    for (let offset = 0; offset < entries.length; offset += TILE_WIDTH) {
      const chunk = entries.slice(offset, offset + TILE_WIDTH);
      const tile = {
        level,
        index: firstTile + offset / TILE_WIDTH,
        width: chunk.length,
        hashes: Buffer.concat(chunk),
      };
      tiles.push(tile);
      tree.remember(tile.level, tile.index, tile.hashes);
      if (chunk.length === TILE_WIDTH) full.push(perfectRoot(chunk));
    }
    appended = full;
    count = Math.floor(count / TILE_WIDTH);
  }
  return tiles;
}
