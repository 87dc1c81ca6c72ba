import { hash } from 'node:crypto';

/** Bytes of a SHA-256 hash: every leaf and node of the log is one. */
export const HASH_BYTES = 32;

/** RFC 9162 §2.1.1 leaf hash: SHA-256(0x00 ‖ record bytes). */
export function leafHash(record: Uint8Array): Buffer {
  // One-shot hashing of one buffer: no Hash object per leaf, which the sequencer makes by the hundred thousand.
  const input = Buffer.allocUnsafe(record.length + 1);
  input[0] = 0x00;
  input.set(record, 1);
  return hash('sha256', input, 'buffer');
}

/** RFC 9162 §2.1.1 interior node hash: SHA-256(0x01 ‖ left ‖ right). */
export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  if (left.length !== HASH_BYTES || right.length !== HASH_BYTES) {
    throw new RangeError(`a node hash joins two ${HASH_BYTES}-byte hashes`);
  }
  // One reused input buffer (hashing is synchronous, so no call sees another's bytes).
  NODE_INPUT.set(left, 1);
  NODE_INPUT.set(right, 1 + HASH_BYTES);
  return hash('sha256', NODE_INPUT, 'buffer');
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

const NODE_INPUT = Buffer.alloc(1 + 2 * HASH_BYTES, 0x01);
