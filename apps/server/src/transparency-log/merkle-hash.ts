import { createHash } from 'node:crypto';

/** Bytes of a SHA-256 hash: every leaf and node of the log is one. */
export const HASH_BYTES = 32;

/** RFC 9162 §2.1.1 leaf hash: SHA-256(0x00 ‖ record bytes). */
export function leafHash(record: Uint8Array): Buffer {
  return createHash('sha256').update(LEAF_PREFIX).update(record).digest();
}

/** RFC 9162 §2.1.1 interior node hash: SHA-256(0x01 ‖ left ‖ right). */
export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  return createHash('sha256').update(NODE_PREFIX).update(left).update(right).digest();
}

/** The root of a perfect subtree whose leaves (or lower subtree roots) are `hashes` (a power of two of them). */
export function perfectRoot(hashes: readonly Uint8Array[]): Uint8Array {
  let level = hashes;
  while (level.length > 1) {
    const next: Uint8Array[] = [];
    for (let i = 0; i < level.length; i += 2)
      next.push(nodeHash(level[i] as Uint8Array, level[i + 1] as Uint8Array));
    level = next;
  }
  const [root] = level;
  if (root === undefined) throw new RangeError('a perfect subtree has at least one hash');
  return root;
}

/** The largest power of two strictly below n (n ≥ 2): where RFC 9162 splits a tree of n leaves. */
export function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

const LEAF_PREFIX = Buffer.from([0]);
const NODE_PREFIX = Buffer.from([1]);
