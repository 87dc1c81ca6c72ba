import {
  emptyTreeHash,
  equalHashes,
  HASH_SIZE,
  type Hash,
  interiorHashes,
  nodeHash,
  perfectRoot,
  splitPoint,
} from './hash.js';

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

/** A tile's place: its tile level and its index in that level. */
export interface TileCoordinates {
  level: number;
  index: number;
}

/**
 * Reads several tiles at once (one query, one round trip to storage): for each of `tiles`, in order, the
 * widest stored tile there as its concatenated hashes, or undefined when none is stored.
 */
export type TileBatchReader = (
  tiles: readonly TileCoordinates[],
) => Promise<ReadonlyArray<Uint8Array | undefined>>;

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

/** A tile's hashes kept by a {@link TileHashCache}, and the hashes computed inside it so far. */
interface KeptTile {
  hashes: Uint8Array;
  /**
   * By the first position of each block: the inner hashes of the perfect blocks the tile's width splits into
   * (256: one block; 236: 128, 64, 32, 8 and 4), each computed whole the first time a subtree in it is asked
   * for (see interiorHashes). At most as many hashes as the tile holds.
   */
  blocks: Map<number, Promise<Uint8Array>>;
}

/**
 * The hashes computed inside tiles, kept from one {@link TileTree} to the next, least recently used out past
 * `capacity` tiles (each at most twice its 8 KiB: its hashes and the ones inside it). A proof needs the roots
 * of subtrees inside a few tiles: those its leaf and its siblings lie in, one a tile level, and the partial
 * tiles of the tree's right edge, which every proof of an older leaf has as a sibling; each costs up to 255
 * hashes to compute. Tiles are still read from storage every time (in the same statement as the rest of the
 * proof's): what is kept is used only for a tile whose bytes equal those read, so an altered or restored
 * tile is seen at once. Keys are the caller's (`level/index` after a prefix of its own), so one cache may
 * serve many trees.
 */
export class TileHashCache {
  readonly #capacity: number;
  readonly #tiles = new Map<string, KeptTile>();

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  /** How many tiles are kept. */
  get size(): number {
    return this.#tiles.size;
  }

  /** Forgets every tile kept. */
  clear(): void {
    this.#tiles.clear();
  }

  /** What is kept under `key`, if anything (for inspection: it does not count as a use). */
  get(key: string): KeptTile | undefined {
    return this.#tiles.get(key);
  }

  /**
   * What is kept for the tile `hashes` under `key`, now the most recently used: the kept entry when its
   * bytes are these, else a new one in its place. Undefined at capacity 0.
   */
  keep(key: string, hashes: Uint8Array): KeptTile | undefined {
    if (this.#capacity <= 0) return undefined;
    const found = this.#tiles.get(key);
    let kept: KeptTile;
    if (found !== undefined && equalHashes(found.hashes, hashes)) {
      // The bytes just read from now on: a tree asks again with the same array, compared at once.
      found.hashes = hashes;
      kept = found;
    } else kept = { hashes, blocks: new Map() };
    this.#tiles.delete(key);
    this.#tiles.set(key, kept);
    if (this.#tiles.size > this.#capacity) this.#tiles.delete(this.#tiles.keys().next().value as string);
    return kept;
  }
}

/** Where a {@link TileTree} keeps tiles between trees: the cache, and this tree's prefix of its keys. */
export interface SharedTiles {
  cache: TileHashCache;
  /** Set before each tile's `level/index` in the cache's keys (one per tree, e.g. the tenant). */
  prefix: string;
}

/**
 * A {@link HashReader} over tiles read through a {@link TileReader}: any complete subtree's hash costs one
 * tile read, so a proof or a root costs O(log n) reads. Tiles read once are kept for the life of the
 * object (one request or one append); throws TreeStorageError when a tile it needs is missing or short.
 *
 * Given a {@link TileBatchReader} as well, the tiles asked for in one turn of the event loop's microtasks
 * are read together in one call. A proof or a root asks for all its tiles in one such turn (the
 * subtrees of a range are asked for side by side, not one after the other), so it costs one read,
 * whatever the tree's size: a round trip to a database each, these reads were most of a proof's time.
 */
export class TileTree implements HashReader {
  readonly #read: TileReader;
  readonly #readBatch: TileBatchReader | undefined;
  readonly #cache = new Map<string, Promise<Uint8Array | undefined>>();
  /** Tiles asked for in this turn and not read yet, with how to settle each. */
  #batch: Array<{
    level: number;
    index: number;
    resolve: (tile: Uint8Array | undefined) => void;
    reject: (error: unknown) => void;
  }> = [];

  readonly #shared: SharedTiles | undefined;

  /**
   * `readBatch` reads the tiles of one turn together (see above); `shared` keeps the hashes computed inside
   * tiles from one tree to the next (see TileHashCache).
   */
  constructor(read: TileReader, options: { readBatch?: TileBatchReader; shared?: SharedTiles } = {}) {
    this.#read = read;
    this.#readBatch = options.readBatch;
    this.#shared = options.shared;
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
      tile = this.#readBatch === undefined ? this.#read(level, index) : this.#readLater(level, index);
      this.#cache.set(key, tile);
    }
    return tile;
  }

  /** Joins the tile to this turn's batch, read once the turn's synchronous work is done. */
  #readLater(level: number, index: number): Promise<Uint8Array | undefined> {
    return new Promise((resolve, reject) => {
      if (this.#batch.length === 0) queueMicrotask(() => this.#readBatched());
      this.#batch.push({ level, index, resolve, reject });
    });
  }

  #readBatched(): void {
    const batch = this.#batch;
    this.#batch = [];
    // In a promise, so that a reader throwing at once fails these tiles' reads, not the microtask.
    const read = Promise.resolve().then(() =>
      batch.length === 1
        ? this.#read(
            (batch[0] as (typeof batch)[number]).level,
            (batch[0] as (typeof batch)[number]).index,
          ).then((tile) => [tile])
        : (this.#readBatch as TileBatchReader)(batch.map(({ level, index }) => ({ level, index }))),
    );
    read.then(
      (tiles) => {
        // A reader answering no array answers no tile: TreeStorageError where one is needed, never a hang.
        batch.forEach((wanted, i) => {
          wanted.resolve(Array.isArray(tiles) ? tiles[i] : undefined);
        });
      },
      (error: unknown) => {
        for (const wanted of batch) wanted.reject(error);
      },
    );
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
    if (tile.length > TILE_WIDTH * HASH_SIZE || tile.length % HASH_SIZE !== 0) {
      throw new TreeStorageError(
        `tile ${level}/${tileIndex} is not a whole number of at most ${TILE_WIDTH} hashes`,
      );
    }
    if (span === 1) return tile.slice(offset * HASH_SIZE, (offset + 1) * HASH_SIZE);
    const kept = this.#shared?.cache.keep(`${this.#shared.prefix}${level}/${tileIndex}`, tile);
    if (kept === undefined) return perfectRoot(tileHashes(tile, offset, offset + span));
    // The perfect block of the tile's width that holds the subtree (blocks are aligned, largest first).
    const width = kept.hashes.length / HASH_SIZE;
    let first = 0;
    let size = TILE_WIDTH;
    for (; size > 1; size /= 2) {
      if ((width & size) === 0) continue;
      if (offset >= first && offset + span <= first + size) break;
      first += size;
    }
    let block = kept.blocks.get(first);
    if (block === undefined) {
      block = interiorHashes(tileHashes(kept.hashes, first, first + size));
      kept.blocks.set(first, block);
    }
    const interior = await block;
    // Inside a block of `size`, height h (h ≥ 1) starts after the size/2 + size/4 + … hashes of those below.
    const h = Math.log2(span);
    const at = (size - size / 2 ** (h - 1) + (offset - first) / span) * HASH_SIZE;
    return interior.slice(at, at + HASH_SIZE);
  }

  async rangeHash(start: number, end: number): Promise<Hash> {
    const n = end - start;
    if (n <= 0) throw new RangeError('an empty range has no hash here');
    if ((n & (n - 1)) === 0 && start % n === 0) return this.subtreeHash(Math.log2(n), start / n);
    const k = splitPoint(n);
    // Both halves asked for at once, so that their tiles are read in the same batch.
    const [left, right] = await Promise.all([
      this.rangeHash(start, start + k),
      this.rangeHash(start + k, end),
    ]);
    return nodeHash(left, right);
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
