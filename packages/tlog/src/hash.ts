/** Bytes of a SHA-256 hash: every record hash and node hash of a log is one. */
export const HASH_SIZE = 32;

/** A SHA-256 hash of a log: a record (leaf) hash, a node hash or a tree (root) hash. */
export type Hash = Uint8Array;

/** Node's one-shot `hash` of `node:crypto`, when this runs on Node, reached without importing `node:`. */
type OneShotHash = (algorithm: 'sha256', data: Uint8Array, encoding: 'buffer') => Uint8Array;
const nodeCrypto = (
  globalThis as {
    process?: { getBuiltinModule?: (id: 'node:crypto') => { hash?: OneShotHash } | undefined };
  }
).process?.getBuiltinModule?.('node:crypto');
const oneShot = nodeCrypto?.hash;

/**
 * SHA-256 of `bytes`. Uses WebCrypto (`crypto.subtle`), which browsers, Deno and Bun have; on Node it uses
 * the synchronous one-shot hash (found through `process.getBuiltinModule`, so no bundler sees a `node:`
 * import), because a log sequencer hashes hundreds of thousands of nodes and a WebCrypto call costs a
 * thread-pool round trip each. Both give the same bytes.
 */
export async function sha256(bytes: Uint8Array): Promise<Hash> {
  if (oneShot !== undefined) return oneShot('sha256', bytes, 'buffer');
  return new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as BufferSource));
}

/** RFC 9162 §2.1.1 leaf hash of a record's exact bytes: SHA-256(0x00 ‖ record). */
export function recordHash(record: Uint8Array): Promise<Hash> {
  const input = new Uint8Array(record.length + 1);
  input.set(record, 1);
  return sha256(input);
}

/**
 * RFC 9162 §2.1.1 interior node hash: SHA-256(0x01 ‖ left ‖ right). Throws a RangeError unless both are
 * {@link HASH_SIZE} bytes.
 */
export function nodeHash(left: Hash, right: Hash): Promise<Hash> {
  if (left.length !== HASH_SIZE || right.length !== HASH_SIZE) {
    throw new RangeError(`a node hash joins two ${HASH_SIZE}-byte hashes`);
  }
  const input = new Uint8Array(1 + 2 * HASH_SIZE);
  input[0] = 0x01;
  input.set(left, 1);
  input.set(right, 1 + HASH_SIZE);
  return sha256(input);
}

/** The RFC 9162 root of the empty tree: SHA-256 of no bytes. */
export function emptyTreeHash(): Promise<Hash> {
  return sha256(new Uint8Array(0));
}

/**
 * The root of a perfect subtree whose leaves (or lower subtree roots) are `hashes`, a power of two of
 * them. Throws a RangeError for none, or for a count that is not a power of two.
 */
export async function perfectRoot(hashes: readonly Hash[]): Promise<Hash> {
  if (hashes.length === 0) throw new RangeError('a perfect subtree has at least one hash');
  if (hashes.length === 1) return hashes[0] as Hash;
  // The root is the last of the interior hashes; copied, so the rest of them is not kept alive.
  return (await interiorHashes(hashes)).slice(-HASH_SIZE);
}

/**
 * Every interior node of the perfect subtree whose leaves are `hashes` (a power of two of them, at least
 * two), level by level from the one above the leaves to the root, concatenated: for 256 leaves, 128 hashes
 * of height 1, then 64 of height 2, …, then the root (255 hashes, 8,160 bytes).
 */
export async function interiorHashes(hashes: readonly Hash[]): Promise<Uint8Array> {
  if (hashes.length < 2 || (hashes.length & (hashes.length - 1)) !== 0) {
    throw new RangeError('interior hashes are of a perfect subtree of at least two hashes');
  }
  const out = new Uint8Array((hashes.length - 1) * HASH_SIZE);
  const input = new Uint8Array(1 + 2 * HASH_SIZE);
  input[0] = 0x01;
  let level = hashes;
  let at = 0;
  while (level.length > 1) {
    const next: Hash[] = [];
    for (let i = 0; i < level.length; i += 2) {
      const left = level[i] as Hash;
      const right = level[i + 1] as Hash;
      if (left.length !== HASH_SIZE || right.length !== HASH_SIZE) {
        throw new RangeError(`a node hash joins two ${HASH_SIZE}-byte hashes`);
      }
      input.set(left, 1);
      input.set(right, 1 + HASH_SIZE);
      const node = oneShot === undefined ? await sha256(input) : oneShot('sha256', input, 'buffer');
      out.set(node, at);
      next.push(out.subarray(at, at + HASH_SIZE));
      at += HASH_SIZE;
    }
    level = next;
  }
  return out;
}

/** The largest power of two strictly below `n` (n ≥ 2): where RFC 9162 splits a tree of n leaves. */
export function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/**
 * Whether two hashes (or tiles of them) hold the same bytes (not constant-time: hashes of a public log are
 * no secret).
 */
export function equalHashes(a: Uint8Array, b: Uint8Array): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
