import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { formatCheckpoint, parseCheckpoint } from './checkpoint.js';
import { fromBase64, toBase64 } from './encoding.js';
import { type Hash, interiorHashes, perfectRoot, recordHash } from './hash.js';
import { isValidName, NoteError, NoteSigner, openNote, parseVerifierKey, signNote } from './note.js';
import { checkRecord, checkTree, ProofError, proveRecord, proveTree } from './proof.js';
import {
  type NewTile,
  type TileCoordinates,
  TileHashCache,
  TileTree,
  TreeStorageError,
  tileHashes,
  tilesForAppend,
  treeHash,
} from './tile.js';

/** Computed by Go's golang.org/x/mod/sumdb/tlog and sumdb/note (scripts/generate-vectors.sh). */
const GO = JSON.parse(readFileSync(new URL('../testdata/vectors.json', import.meta.url), 'utf8')) as {
  records: string[];
  record_hashes: string[];
  tree_hashes: string[];
  inclusions: { index: number; tree_size: number; proof: string[] }[];
  consistencies: { old_size: number; new_size: number; proof: string[] }[];
  tiles: { tree_size: number; level: number; index: number; width: number; hashes: string }[];
  notes: { name: string; seed: string; verifier_key: string; text: string; note: string }[];
};
const bytes = (text: string) => fromBase64(text) as Uint8Array;
const b64 = (hashes: readonly Hash[]) => hashes.map(toBase64);
/** The value, which the vectors hold. */
function must<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('the vectors lack a value this test reads');
  return value;
}
const root = (size: number) => bytes(must(GO.tree_hashes[size]));

/** A tree of the vectors' first `size` records, in tiles as a store would hold them (appended in batches). */
async function treeOf(size: number): Promise<{ tree: TileTree; tiles: NewTile[] }> {
  const stored = new Map<string, Uint8Array>();
  const tree = () => new TileTree(async (level, index) => stored.get(`${level}/${index}`));
  const hashes = await Promise.all(GO.records.slice(0, size).map((record) => recordHash(bytes(record))));
  let tiles: NewTile[] = [];
  for (let done = 0; done < size; done += 37) {
    tiles = await tilesForAppend(tree(), done, hashes.slice(done, done + 37));
    for (const tile of tiles) stored.set(`${tile.level}/${tile.index}`, tile.hashes);
  }
  return { tree: tree(), tiles };
}

describe('hashing and tiles, as Go computes them', () => {
  it('gives the record hashes and the root of every tree size from 0 to 300', async () => {
    const { tree } = await treeOf(300);
    for (const [i, record] of GO.records.entries()) {
      expect(toBase64(await recordHash(bytes(record))), `record ${i}`).toBe(GO.record_hashes[i]);
    }
    for (const [size, root] of GO.tree_hashes.entries()) {
      expect(toBase64(await treeHash(tree, size)), `tree ${size}`).toBe(root);
    }
  });

  it('stores the tiles Go tlog.NewTiles and ReadTileData give (full and partial)', async () => {
    for (const size of new Set(GO.tiles.map((tile) => tile.tree_size))) {
      const stored = new Map<string, Uint8Array>();
      const tree = new TileTree(async (level, index) => stored.get(`${level}/${index}`));
      const hashes = await Promise.all(GO.records.slice(0, size).map((record) => recordHash(bytes(record))));
      const ours = await tilesForAppend(tree, 0, hashes);
      const theirs = GO.tiles.filter((tile) => tile.tree_size === size);
      expect(
        ours.map(({ level, index, width, hashes }) => ({ level, index, width, hashes: toBase64(hashes) })),
        `tree ${size}`,
      ).toEqual(theirs.map(({ tree_size, ...tile }) => tile));
    }
  });
});

describe('proveRecord / checkRecord', () => {
  it("proves as Go's tlog.ProveRecord does, and checks Go's proofs", async () => {
    const { tree } = await treeOf(300);
    for (const { index, tree_size, proof } of GO.inclusions) {
      expect(b64(await proveRecord(tree, tree_size, index)), `${index} in ${tree_size}`).toEqual(proof);
      const leaf = bytes(GO.record_hashes[index] as string);
      await checkRecord(proof.map(bytes), tree_size, bytes(GO.tree_hashes[tree_size] as string), index, leaf);
    }
  });

  it('refuses another leaf, another root, a cut or a lengthened path, naming the leaf', async () => {
    const { index, tree_size, proof } = must(GO.inclusions.find((p) => p.tree_size === 17 && p.index === 8));
    const root = bytes(GO.tree_hashes[17] as string);
    const path = proof.map(bytes);
    const leaf = bytes(GO.record_hashes[index] as string);
    const other = bytes(GO.record_hashes[9] as string);
    await expect(checkRecord(path, tree_size, root, index, other)).rejects.toThrow(
      /^leaf 8: .*root mismatch/,
    );
    await expect(checkRecord(path, tree_size, other, index, leaf)).rejects.toThrow(ProofError);
    await expect(checkRecord(path.slice(1), tree_size, root, index, leaf)).rejects.toThrow(ProofError);
    await expect(checkRecord([...path, root, root], tree_size, root, index, leaf)).rejects.toThrow(
      /too long/,
    );
    await expect(checkRecord(path, tree_size, root, 17, leaf)).rejects.toThrow(/not in a tree of 17/);
    await expect(checkRecord([new Uint8Array(3)], tree_size, root, index, leaf)).rejects.toThrow(ProofError);
  });
});

describe('reading a tree in batches, and keeping full tiles', () => {
  /** The vectors' tree of 300 as stored tiles, and a TileTree over them counting each kind of read. */
  let tiles: Promise<Map<string, Uint8Array>> | undefined;
  /** The widest tile at each place, as the vectors' tree of 300 is stored. */
  async function storedTiles(): Promise<Map<string, Uint8Array>> {
    const stored = new Map<string, Uint8Array>();
    const hashes = await Promise.all(GO.records.slice(0, 300).map((record) => recordHash(bytes(record))));
    for (const tile of await tilesForAppend(new TileTree(async () => undefined), 0, hashes))
      stored.set(`${tile.level}/${tile.index}`, tile.hashes);
    return stored;
  }
  async function countingTree(shared?: { cache: TileHashCache; prefix: string }) {
    tiles ??= storedTiles();
    const stored = await tiles;
    const reads = { single: 0, batches: [] as TileCoordinates[][] };
    const tree = new TileTree(
      async (level, index) => {
        reads.single++;
        return stored.get(`${level}/${index}`);
      },
      {
        readBatch: async (wanted) => {
          reads.batches.push([...wanted]);
          return wanted.map(({ level, index }) => stored.get(`${level}/${index}`));
        },
        ...(shared && { shared }),
      },
    );
    return { tree, reads };
  }

  it("reads all of a proof's tiles in one batch, and proves as Go does", async () => {
    for (const { index, tree_size, proof } of GO.inclusions) {
      const { tree, reads } = await countingTree();
      expect(b64(await proveRecord(tree, tree_size, index)), `${index} in ${tree_size}`).toEqual(proof);
      expect(reads.single + reads.batches.length, `${index} in ${tree_size}: reads`).toBeLessThanOrEqual(1);
    }
    for (const { old_size, new_size, proof } of GO.consistencies) {
      const { tree, reads } = await countingTree();
      expect(b64(await proveTree(tree, new_size, old_size)), `${old_size} → ${new_size}`).toEqual(proof);
      expect(reads.single + reads.batches.length, `${old_size} → ${new_size}: reads`).toBeLessThanOrEqual(1);
    }
    // A proof in a tree of two tile levels: its tiles (both levels, full and partial) in one batch.
    const { tree, reads } = await countingTree();
    await expect(proveRecord(tree, 300, 3)).resolves.toHaveLength(9);
    expect(reads.single).toBe(0);
    expect(reads.batches).toHaveLength(1);
    expect(reads.batches[0]?.length).toBeGreaterThan(1);
  });

  it('keeps the hashes computed inside tiles between trees: the same proofs, each block hashed once', async () => {
    const cache = new TileHashCache(8);
    for (const { index, tree_size, proof } of GO.inclusions) {
      const { tree } = await countingTree({ cache, prefix: 'a/' });
      expect(b64(await proveRecord(tree, tree_size, index)), `${index} in ${tree_size}`).toEqual(proof);
    }
    for (const { old_size, new_size, proof } of GO.consistencies) {
      const { tree } = await countingTree({ cache, prefix: 'a/' });
      expect(b64(await proveTree(tree, new_size, old_size)), `${old_size} → ${new_size}`).toEqual(proof);
    }
    // Tree 300: tile 0/0 is full (one block of 256), 0/1 holds 44 hashes (blocks of 32, 8 and 4 at 0, 32, 40).
    expect([...(cache.get('a/0/0')?.blocks.keys() ?? [])]).toEqual([0]);
    expect([...(cache.get('a/0/1')?.blocks.keys() ?? [])].sort((x, y) => x - y)).toEqual([0, 32, 40]);
    // Another prefix (another tenant's tree) shares nothing.
    expect(cache.get('b/0/0')).toBeUndefined();
  });

  it('uses what it keeps only for the very bytes read: an altered tile gives another proof, restored the same', async () => {
    const cache = new TileHashCache(8);
    const stored = await storedTiles();
    const good = stored.get('0/0') as Uint8Array;
    const proveWith = (tile: Uint8Array) =>
      proveRecord(
        new TileTree(
          async (level, index) => (level === 0 && index === 0 ? tile : stored.get(`${level}/${index}`)),
          {
            readBatch: async (wanted) =>
              wanted.map(({ level, index }) =>
                level === 0 && index === 0 ? tile : stored.get(`${level}/${index}`),
              ),
            shared: { cache, prefix: 'a/' },
          },
        ),
        300,
        3,
      ).then(b64);
    // As a tree keeping nothing proves it (the test above checks such proofs against Go's).
    const expected = b64(
      await proveRecord(new TileTree(async (level, index) => stored.get(`${level}/${index}`)), 300, 3),
    );
    expect(await proveWith(good)).toEqual(expected);
    const altered = good.slice();
    altered[200 * 32] = (altered[200 * 32] as number) ^ 0xff;
    expect(await proveWith(altered)).not.toEqual(expected);
    expect(await proveWith(good)).toEqual(expected);
  });

  it('keeps tiles up to its capacity, the least recently used leaving first', () => {
    const tile = new Uint8Array(256 * 32);
    const cache = new TileHashCache(2);
    cache.keep('a', tile);
    cache.keep('b', tile);
    cache.keep('a', tile);
    cache.keep('c', tile);
    expect([
      cache.get('a') !== undefined,
      cache.get('b') !== undefined,
      cache.get('c') !== undefined,
    ]).toEqual([true, false, true]);
    expect(new TileHashCache(0).keep('a', tile)).toBeUndefined();
  });

  it('answers TreeStorageError for a batch reader answering no array, and for a tile of more than 256 hashes', async () => {
    const noArray = new TileTree(async () => undefined, {
      readBatch: async () => undefined as unknown as Uint8Array[],
    });
    await expect(proveRecord(noArray, 300, 3)).rejects.toThrow(TreeStorageError);
    const tooWide = new TileTree(async () => new Uint8Array(512 * 32), {
      shared: { cache: new TileHashCache(4), prefix: '' },
    });
    await expect(tooWide.subtreeHash(1, 0)).rejects.toThrow(TreeStorageError);
  });

  it('fails the proof, not the process, when the batch reader throws at once', async () => {
    const tree = new TileTree(async () => undefined, {
      readBatch: () => {
        throw new Error('storage is gone');
      },
    });
    await expect(proveRecord(tree, 300, 3)).rejects.toThrow('storage is gone');
  });

  it('gives the inner hashes of a perfect subtree, level by level, as perfectRoot gives each', async () => {
    const leaves = await Promise.all(GO.records.slice(0, 16).map((record) => recordHash(bytes(record))));
    const interior = await interiorHashes(leaves);
    expect(interior.length).toBe(15 * 32);
    let at = 0;
    for (let span = 2; span <= 16; span *= 2)
      for (let i = 0; i < 16; i += span, at++)
        expect(toBase64(interior.subarray(at * 32, (at + 1) * 32)), `${span} from ${i}`).toBe(
          toBase64(await perfectRoot(leaves.slice(i, i + span))),
        );
    await expect(interiorHashes(leaves.slice(0, 3))).rejects.toThrow(RangeError);
    expect(toBase64(tileHashes(interior, 14, 15)[0] as Hash)).toBe(toBase64(await perfectRoot(leaves)));
  });
});

describe('proveTree / checkTree', () => {
  it("proves as Go's tlog.ProveTree does, and checks Go's proofs", async () => {
    const { tree } = await treeOf(300);
    for (const { old_size, new_size, proof } of GO.consistencies) {
      expect(b64(await proveTree(tree, new_size, old_size)), `${old_size} → ${new_size}`).toEqual(proof);
      await checkTree(proof.map(bytes), new_size, root(new_size), old_size, root(old_size));
    }
  });

  it('refuses a swapped pair, another old root and a shortened proof', async () => {
    const { proof } = must(GO.consistencies.find((p) => p.old_size === 7 && p.new_size === 17));
    const [h7, h17, h8] = [root(7), root(17), root(8)];
    const path = proof.map(bytes);
    await expect(checkTree(path, 7, h7, 17, h17)).rejects.toThrow(/newer tree is smaller/);
    await expect(checkTree(path, 17, h17, 7, h8)).rejects.toThrow(/^trees 7 → 17 .*root mismatch$/);
    await expect(checkTree(path.slice(0, -1), 17, h17, 7, h7)).rejects.toThrow(ProofError);
    await expect(checkTree([], 17, h17, 17, h8)).rejects.toThrow(/same size, different roots/);
  });

  // Review: a junk proof line with the same size and identical roots was called a fork.
  it('tells a proof sent between equal sizes from different roots', async () => {
    const h7 = root(7);
    await checkTree([], 7, h7, 7, h7);
    const junk = [new Uint8Array(32).fill(1)];
    await expect(checkTree(junk, 7, h7, 7, h7)).rejects.toMatchObject({
      name: 'ProofError',
      reason: 'a proof between trees of the same size must be empty',
    });
    await expect(checkTree(junk, 7, h7, 7, h7)).rejects.not.toThrow(/different roots/);
  });
});

describe('checkpoints and signed notes', () => {
  it("signs exactly as Go's note.Sign, and opens Go's notes with Go's verifier keys", async () => {
    for (const vector of GO.notes) {
      const signer = new NoteSigner(vector.name, bytes(vector.seed));
      expect(await signer.verifierKey()).toBe(vector.verifier_key);
      expect(await signNote(vector.text, signer)).toBe(vector.note);
      const opened = await openNote(vector.note, [await parseVerifierKey(vector.verifier_key)]);
      expect(opened.text).toBe(vector.text);
      expect(parseCheckpoint(opened.text)).toEqual({
        origin: vector.name,
        treeSize: 300,
        rootHash: bytes(GO.tree_hashes[300] as string),
      });
      expect(formatCheckpoint(parseCheckpoint(opened.text))).toBe(vector.text);
    }
  });

  it('refuses an altered text, another key, a key whose ID does not match, and what is not a note', async () => {
    const [first, second] = [must(GO.notes[0]), must(GO.notes[1])];
    const key = await parseVerifierKey(first.verifier_key);
    const altered = first.note.replace('\n300\n', '\n301\n');
    await expect(openNote(altered, [key])).rejects.toMatchObject({ reason: 'unverified' });
    await expect(openNote(first.note, [await parseVerifierKey(second.verifier_key)])).rejects.toThrow(
      NoteError,
    );
    await expect(
      parseVerifierKey(first.verifier_key.replace(/\+[0-9a-f]{8}\+/, '+00000000+')),
    ).rejects.toThrow(/does not match its key/);
    await expect(openNote('no note', [key])).rejects.toMatchObject({ reason: 'malformed' });
    expect(() => parseCheckpoint('origin\n01\nAAAA\n')).toThrow(/not a tlog-checkpoint/);
    expect(() => new NoteSigner('a name', new Uint8Array(32))).toThrow(RangeError);
  });

  it("refuses as malformed what Go's note.Open refuses, even beside a valid signature", async () => {
    const first = must(GO.notes[0]);
    const key = await parseVerifierKey(first.verifier_key);
    const line = first.note.slice(first.note.lastIndexOf('\n\n') + 2);
    const malformed = {
      'a line that is not a signature': `${first.note}junk\n`,
      'a 10 MB line': `${first.note}${'A'.repeat(10_000_000)}\n`,
      'an empty signature block': `${first.note.slice(0, first.note.lastIndexOf('\n\n') + 2)}`,
      'more than 100 signature lines': `${first.note}${'— other AAAAAAAA\n'.repeat(100)}`,
      'a name with a plus': `${first.note}— a+b AAAAAAAA\n`,
      'a signature under 5 bytes': `${first.note}— other AAAA\n`,
      'a tab in the text': first.note.replace('\n300\n', '\n300\t\n'),
      'a lone surrogate': first.note.replace('\n300\n', '\n300\uD800\n'),
    };
    for (const [what, note] of Object.entries(malformed)) {
      await expect(openNote(note, [key]), what).rejects.toMatchObject({ reason: 'malformed' });
    }
    // A repeated signature by the same key, and lines by other keys, are fine (Go drops the repeat).
    const repeated = `${first.note}${line}— other AAAAAAAA\n`;
    expect((await openNote(repeated, [key])).signatures).toHaveLength(1);
  });

  it("reads a verifier key's name as Go's note.NewVerifier does: U+FEFF in, U+0085 and a lone surrogate out", async () => {
    const seed = new Uint8Array(32).fill(7);
    const feff = await new NoteSigner('a\uFEFFb', seed).verifierKey();
    expect((await parseVerifierKey(feff)).name).toBe('a\uFEFFb');
    const [, keyId, keyBytes] = (await new NoteSigner('x', seed).verifierKey()).split('+');
    for (const bad of ['a\u0085b', 'a\uD800b', 'a b'])
      await expect(
        parseVerifierKey(`${bad}+${keyId}+${keyBytes}`),
        JSON.stringify(bad),
      ).rejects.toMatchObject({
        reason: 'malformed',
      });
    // An upper-case key ID, as Go's strconv.ParseUint reads it; spaces around the whole key dropped.
    const key = await new NoteSigner('example.com/log', seed).verifierKey();
    const [name, id, encoded] = key.split('+');
    expect((await parseVerifierKey(` ${name}+${(id as string).toUpperCase()}+${encoded}\n`)).name).toBe(name);
  });

  it("takes a key name as Go's note.isValidName does: Unicode White_Space and '+' out, U+FEFF in", () => {
    for (const name of ['example.com/log', 'a\uFEFFb', 'café', '\u{1F600}'])
      expect(isValidName(name), JSON.stringify(name)).toBe(true);
    for (const name of ['', 'a b', 'a+b', 'a\tb', 'a\u0085b', 'a\u00A0b', 'a\u2028b', 'a\u3000b', 'a\uD800'])
      expect(isValidName(name), JSON.stringify(name)).toBe(false);
  });
});
