import { equalHashes, HASH_SIZE, type Hash, nodeHash, splitPoint } from './hash.js';
import type { HashReader } from './tile.js';

/** Thrown when a proof does not verify; `reason` says what did not hold, `message` also which leaf or trees. */
export class ProofError extends Error {
  override readonly name = 'ProofError';
  readonly reason: string;

  constructor(message: string, reason: string) {
    super(message);
    this.reason = reason;
  }
}

/**
 * RFC 9162 §2.1.3 inclusion proof (audit path, from the leaf up) of leaf `index` in the tree of
 * `treeSize` leaves read from `tree`. Throws a RangeError unless 0 ≤ index < treeSize.
 */
export async function proveRecord(tree: HashReader, treeSize: number, index: number): Promise<Hash[]> {
  if (!(index >= 0 && index < treeSize))
    throw new RangeError(`leaf ${index} is not in a tree of ${treeSize}`);
  const siblings: Array<Promise<Hash>> = [];
  let start = 0;
  let end = treeSize;
  while (end - start > 1) {
    const k = splitPoint(end - start);
    if (index < start + k) {
      siblings.push(tree.rangeHash(start + k, end));
      end = start + k;
    } else {
      siblings.push(tree.rangeHash(start, start + k));
      start += k;
    }
  }
  // The path lists the last split first.
  return Promise.all(siblings.reverse());
}

/**
 * Checks, by RFC 9162 §2.1.3.2, that `proof` shows the record hash `leaf` as leaf `index` of the tree of
 * `treeSize` leaves whose root is `treeHash` (a record's hash is `recordHash` of its bytes).
 * Resolves when it does; throws a ProofError naming the leaf otherwise.
 */
export async function checkRecord(
  proof: readonly Hash[],
  treeSize: number,
  treeHash: Hash,
  index: number,
  leaf: Hash,
): Promise<void> {
  if (!(index >= 0 && index < treeSize)) {
    throw new ProofError(`leaf ${index} is not in a tree of ${treeSize}`, 'not in the tree');
  }
  if (!proof.every(isHash)) {
    throw new ProofError(
      `leaf ${index}: an inclusion path hash is not ${HASH_SIZE} bytes`,
      'malformed proof',
    );
  }
  let fn = index;
  let sn = treeSize - 1;
  let r = leaf;
  for (const sibling of proof) {
    if (sn === 0) throw new ProofError(`leaf ${index}: the inclusion path is too long`, 'too long');
    if (fn % 2 === 1 || fn === sn) {
      r = await nodeHash(sibling, r);
      if (fn % 2 === 0) while (fn % 2 === 0 && fn !== 0) [fn, sn] = [half(fn), half(sn)];
    } else {
      r = await nodeHash(r, sibling);
    }
    [fn, sn] = [half(fn), half(sn)];
  }
  if (sn !== 0 || !equalHashes(r, treeHash)) {
    throw new ProofError(
      `leaf ${index}: the record is not in the tree of ${treeSize} (root mismatch)`,
      'root mismatch',
    );
  }
}

/**
 * RFC 9162 §2.1.4 consistency proof that the tree of `treeSize` leaves read from `tree` extends the tree
 * of its first `oldSize` leaves. Empty when the sizes are equal; throws a RangeError unless
 * 1 ≤ oldSize ≤ treeSize.
 */
export async function proveTree(tree: HashReader, treeSize: number, oldSize: number): Promise<Hash[]> {
  if (!(oldSize >= 1 && oldSize <= treeSize)) {
    throw new RangeError(`no consistency proof from ${oldSize} to ${treeSize}`);
  }
  const parts: Array<Promise<Hash>> = [];
  let m = oldSize;
  let start = 0;
  let end = treeSize;
  let complete = true;
  while (m !== end - start) {
    const k = splitPoint(end - start);
    if (m <= k) {
      parts.push(tree.rangeHash(start + k, end));
      end = start + k;
    } else {
      parts.push(tree.rangeHash(start, start + k));
      m -= k;
      start += k;
      complete = false;
    }
  }
  if (!complete) parts.push(tree.rangeHash(start, end));
  // SUBPROOF appends on the way back up its recursion: the deepest hash comes first.
  return Promise.all(parts.reverse());
}

/**
 * Checks, by RFC 9162 §2.1.4.2, that `proof` shows the tree of `treeSize` leaves and root `treeHash`
 * extends the tree of `oldSize` leaves and root `oldHash` (any tree extends the empty one; equal sizes
 * need an empty proof and equal roots). Resolves when it does; throws a ProofError otherwise.
 */
export async function checkTree(
  proof: readonly Hash[],
  treeSize: number,
  treeHash: Hash,
  oldSize: number,
  oldHash: Hash,
): Promise<void> {
  const fail = (reason: string) =>
    new ProofError(`trees ${oldSize} → ${treeSize} are not consistent: ${reason}`, reason);
  if (oldSize > treeSize) throw fail('the newer tree is smaller');
  if (!proof.every(isHash)) throw fail(`a proof hash is not ${HASH_SIZE} bytes`);
  if (oldSize === treeSize) {
    // Two failures, told apart: a proof sent where none can be (RFC 9162's proof between equal sizes is
    // empty) says nothing about the roots, which may be identical; only different roots are a fork.
    if (proof.length !== 0) throw fail('a proof between trees of the same size must be empty');
    if (!equalHashes(oldHash, treeHash)) throw fail('same size, different roots');
    return;
  }
  if (oldSize === 0) return;
  const path = Number.isInteger(Math.log2(oldSize)) ? [oldHash, ...proof] : [...proof];
  if (path.length === 0) throw fail('empty proof');
  let fn = oldSize - 1;
  let sn = treeSize - 1;
  while (fn % 2 === 1) [fn, sn] = [half(fn), half(sn)];
  let fr = path[0] as Hash;
  let sr = fr;
  for (const c of path.slice(1)) {
    if (sn === 0) throw fail('the proof is too long');
    if (fn % 2 === 1 || fn === sn) {
      fr = await nodeHash(c, fr);
      sr = await nodeHash(c, sr);
      if (fn % 2 === 0) while (fn % 2 === 0 && fn !== 0) [fn, sn] = [half(fn), half(sn)];
    } else {
      sr = await nodeHash(sr, c);
    }
    [fn, sn] = [half(fn), half(sn)];
  }
  if (sn !== 0 || !equalHashes(fr, oldHash) || !equalHashes(sr, treeHash)) throw fail('root mismatch');
}

function isHash(hash: Hash): boolean {
  return hash.length === HASH_SIZE;
}

/** Halves without 32-bit bit operations, so tree sizes above 2^31 stay exact. */
function half(n: number): number {
  return Math.floor(n / 2);
}
