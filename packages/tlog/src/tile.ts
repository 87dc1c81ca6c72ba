import { emptyTreeHash, HASH_SIZE, type Hash, nodeHash, perfectRoot, splitPoint } from './hash.js';

/** Tile height (C2SP tlog-tiles): a tile holds up to 2^8 = 256 hashes of one tile level. */
export const TILE_HEIGHT = 8;

/** Hashes in a full tile: 2^{@link TILE_HEIGHT}. */
export const TILE_WIDTH = 1 << TILE_HEIGHT;

/**
 * The storage a tree is read from, passed by the caller: the widest stored tile (level, index) as its
 * concatenated hashes, or undefined when none is stored. A tile of level L holds the roots of the perfect
 * subtrees of height 8·L, left to right.
 */
export type TileReader = (level: number, index: number) => Promise<Uint8Array | undefined>;

/** A tile to store: `width` hashes of tile level `level` from position `index · 256`, concatenated. */
export interface NewTile {
  level: number;
  index: number;
  width: number;
  hashes: Uint8Array;
}

/** Reads hashes of a tree: the root of the leaves [start, end), as RFC 9162's recursion splits them. */
export interface HashReader {
  rangeHash(start: number, end: number): Promise<Hash>;
}

/** The RFC 9162 root of the tree of `size` leaves read from `tree` (SHA-256 of nothing when empty). */
export function treeHash(tree: HashReader, size: number): Promise<Hash> {
  return size === 0 ? emptyTreeHash() : tree.rangeHash(0, size);
}

/** Thrown when the stored tiles cannot give a hash the tree must have: storage lost or altered rows. */
export class TreeStorageError extends Error {
  override readonly name = 'TreeStorageError';
}

/**
 * A {@link HashReader} over tiles read through a {@link TileReader}: any complete subtree's hash costs one
 * tile read, so a proof or a root costs O(log n) reads. Tiles read once are kept for the life of the
 * object (one request or one append); throws TreeStorageError when a tile it needs is missing or short.
 */
export class TileTree implements HashReader {
  readonly #read: TileReader;
  readonly #cache = new Map<string, Promise<Uint8Array | undefined>>();

  constructor(read: TileReader) {
    this.#read = read;
  }

  /** Keeps a tile just written, so that hashes of the grown tree are read without asking storage. */
  remember(tile: NewTile): void {
    this.#cache.set(`${tile.level}/${tile.index}`, Promise.resolve(tile.hashes));
  }

  /** The widest stored tile (level, index), read once. */
  tile(level: number, index: number): Promise<Uint8Array | undefined> {
    const key = `${level}/${index}`;
    let tile = this.#cache.get(key);
    if (tile === undefined) {
      tile = this.#read(level, index);
      this.#cache.set(key, tile);
    }
    return tile;
  }

  /** The root of the perfect subtree of height `height` that is the `index`-th of that height. */
  async subtreeHash(height: number, index: number): Promise<Hash> {
    const level = Math.floor(height / TILE_HEIGHT);
    const span = 2 ** (height % TILE_HEIGHT);
    const start = index * span;
    const tileIndex = Math.floor(start / TILE_WIDTH);
    const offset = start % TILE_WIDTH;
    const tile = await this.tile(level, tileIndex);
    if (tile === undefined || tile.length < (offset + span) * HASH_SIZE) {
      throw new TreeStorageError(
        `tile ${level}/${tileIndex} is missing or too short for subtree ${height}/${index}`,
      );
    }
    return perfectRoot(tileHashes(tile, offset, offset + span));
  }

  async rangeHash(start: number, end: number): Promise<Hash> {
    const n = end - start;
    if (n <= 0) throw new RangeError('an empty range has no hash here');
    if ((n & (n - 1)) === 0 && start % n === 0) return this.subtreeHash(Math.log2(n), start / n);
    const k = splitPoint(n);
    return nodeHash(await this.rangeHash(start, start + k), await this.rangeHash(start + k, end));
  }
}

/** The hashes `from` to `to` (exclusive) of a tile's concatenated hashes, as views into it. */
export function tileHashes(tile: Uint8Array, from = 0, to = tile.length / HASH_SIZE): Hash[] {
  const hashes: Hash[] = [];
  for (let i = from; i < to; i++) hashes.push(tile.subarray(i * HASH_SIZE, (i + 1) * HASH_SIZE));
  return hashes;
}

/**
 * The tiles that appending the record hashes `recordHashes` to the tree of `size` leaves in `tree`
 * creates: at each tile level the partial tile on the right edge gets the new hashes, and every tile that
 * fills up gives its root to the level above. Stored tiles are never changed: a wider copy of a partial
 * tile is a new tile of its own width. Remembers the new tiles in `tree`, so its hashes are those of the
 * grown tree. Throws TreeStorageError when the right edge's tiles are missing or short.
 */
export async function tilesForAppend(
  tree: TileTree,
  size: number,
  recordHashes: readonly Hash[],
): Promise<NewTile[]> {
  const tiles: NewTile[] = [];
  let appended: readonly Hash[] = recordHashes;
  let count = size; // complete hashes at this tile level before the append
  for (let level = 0; appended.length > 0; level++) {
    const firstTile = Math.floor(count / TILE_WIDTH);
    const kept = count % TILE_WIDTH;
    const entries: Hash[] = [];
    if (kept > 0) {
      const stored = await tree.tile(level, firstTile);
      if (stored === undefined || stored.length < kept * HASH_SIZE) {
        throw new TreeStorageError(`tile ${level}/${firstTile} is missing or shorter than ${kept} hashes`);
      }
      entries.push(...tileHashes(stored, 0, kept));
    }
    entries.push(...appended);
    const full: Hash[] = [];
    for (let offset = 0; offset < entries.length; offset += TILE_WIDTH) {
      const chunk = entries.slice(offset, offset + TILE_WIDTH);
      const tile = {
        level,
        index: firstTile + offset / TILE_WIDTH,
        width: chunk.length,
        hashes: concat(chunk),
      };
      tiles.push(tile);
      tree.remember(tile);
      if (chunk.length === TILE_WIDTH) full.push(await perfectRoot(chunk));
    }
    appended = full;
    count = Math.floor(count / TILE_WIDTH);
  }
  return tiles;
}

function concat(hashes: readonly Hash[]): Uint8Array {
  const out = new Uint8Array(hashes.length * HASH_SIZE);
  hashes.forEach((hash, i) => {
    out.set(hash, i * HASH_SIZE);
  });
  return out;
}
