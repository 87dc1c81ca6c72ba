import { HASH_BYTES, nodeHash, perfectRoot, splitPoint } from './merkle-hash.js';

/** Tile height (C2SP tlog-tiles): a tile holds up to 2^8 = 256 hashes of one tile level. */
export const TILE_HEIGHT = 8;
export const TILE_WIDTH = 1 << TILE_HEIGHT;

/** Reads the widest stored tile (level, index) as its concatenated hashes, or undefined when none is stored. */
export type TileReader = (level: number, index: number) => Promise<Uint8Array | undefined>;

/** Thrown when the stored hashes cannot give a hash the tree must have: storage lost or altered rows. */
export class TreeStorageError extends Error {
  override readonly name = 'TreeStorageError';
}

/**
 * Reads the hashes of a tenant's tree from its tiles: a tile of level L holds the roots of the perfect
 * subtrees of height 8·L, so any complete subtree's hash costs one tile read, and a proof O(log n) reads.
 * Tiles read once are cached for the life of this object (one request or one sequencing batch).
 */
export class TileTree {
  readonly #read: TileReader;
  readonly #cache = new Map<string, Promise<Uint8Array | undefined>>();

  constructor(read: TileReader) {
    this.#read = read;
  }

  /** Puts a tile just written in the cache, so hashes of the new tree are read without a query. */
  remember(level: number, index: number, hashes: Uint8Array): void {
    this.#cache.set(`${level}/${index}`, Promise.resolve(hashes));
  }

  /** The tile (level, index)'s hashes, widest stored. */
  tile(level: number, index: number): Promise<Uint8Array | undefined> {
    const key = `${level}/${index}`;
    let tile = this.#cache.get(key);
    if (tile === undefined) {
      tile = this.#read(level, index);
      this.#cache.set(key, tile);
    }
    return tile;
  }

  /** The root of the perfect subtree of height `height` whose index among those is `index`. */
  async subtree(height: number, index: number): Promise<Uint8Array> {
    const level = Math.floor(height / TILE_HEIGHT);
    const span = 1 << (height % TILE_HEIGHT);
    const start = index * span;
    const tileIndex = Math.floor(start / TILE_WIDTH);
    const offset = start % TILE_WIDTH;
    const tile = await this.tile(level, tileIndex);
    if (tile === undefined || tile.length < (offset + span) * HASH_BYTES) {
      throw new TreeStorageError(
        `tile ${level}/${tileIndex} is missing or too short for subtree ${height}/${index}`,
      );
    }
    const hashes: Uint8Array[] = [];
    for (let i = offset; i < offset + span; i++)
      hashes.push(tile.subarray(i * HASH_BYTES, (i + 1) * HASH_BYTES));
    return perfectRoot(hashes);
  }

  /** RFC 9162 MTH of the leaves [start, end), where `start` is aligned as the RFC's recursion makes it. */
  async range(start: number, end: number): Promise<Uint8Array> {
    const n = end - start;
    if (n <= 0) throw new RangeError('an empty range has no hash here');
    if ((n & (n - 1)) === 0 && start % n === 0) return this.subtree(Math.log2(n), start / n);
    const k = splitPoint(n);
    return nodeHash(await this.range(start, start + k), await this.range(start + k, end));
  }

  /** The root hash of the tree of `size` leaves (SHA-256 of nothing for the empty tree, RFC 9162). */
  async root(size: number): Promise<Uint8Array> {
    if (size === 0) return EMPTY_ROOT;
    return this.range(0, size);
  }

  /** RFC 9162 §2.1.3 inclusion proof (audit path) of leaf `index` in the tree of `size` leaves. */
  async inclusionProof(index: number, size: number): Promise<Uint8Array[]> {
    if (index < 0 || index >= size) throw new RangeError(`leaf ${index} is not in a tree of ${size}`);
    const path: Uint8Array[] = [];
    let start = 0;
    let end = size;
    const siblings: Array<Promise<Uint8Array>> = [];
    while (end - start > 1) {
      const k = splitPoint(end - start);
      if (index < start + k) {
        siblings.push(this.range(start + k, end));
        end = start + k;
      } else {
        siblings.push(this.range(start, start + k));
        start += k;
      }
    }
    // The RFC lists the path from the leaf up: the last split is the first hash.
    for (const sibling of siblings.reverse()) path.push(await sibling);
    return path;
  }

  /** RFC 9162 §2.1.4 consistency proof from the tree of `oldSize` leaves to the tree of `newSize` (1 ≤ old ≤ new). */
  async consistencyProof(oldSize: number, newSize: number): Promise<Uint8Array[]> {
    if (oldSize < 1 || oldSize > newSize)
      throw new RangeError(`no consistency proof from ${oldSize} to ${newSize}`);
    const parts: Array<Promise<Uint8Array>> = [];
    let m = oldSize;
    let start = 0;
    let end = newSize;
    let complete = true;
    while (m !== end - start) {
      const k = splitPoint(end - start);
      if (m <= k) {
        parts.push(this.range(start + k, end));
        end = start + k;
      } else {
        parts.push(this.range(start, start + k));
        m -= k;
        start += k;
        complete = false;
      }
    }
    if (!complete) parts.push(this.range(start, end));
    // SUBPROOF appends on the way back up the recursion: the deepest hash comes first.
    return Promise.all(parts.reverse());
  }
}

const EMPTY_ROOT = new Uint8Array(
  Buffer.from('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855', 'hex'),
);
