import {
  equalHashes,
  type NoteVerifier,
  openNote,
  parseCheckpoint,
  TileTree,
  TreeStorageError,
  treeHash,
} from '@scenario-scoring/tlog';
import type { Kysely } from 'kysely';
import type { Database } from '../storage/database.js';
import {
  clearLogFaults,
  selectCheckpoint,
  selectCheckpointSizes,
  selectTile,
  selectTreeSize,
} from './verifiable-log-store.js';

/** What the self-check found: the leaves [firstIndex, endIndex) of a tree of `treeSize` hold an altered hash. */
export interface LogFault {
  treeSize: number;
  firstIndex: number;
  endIndex: number;
  /** What did not match, for the operator's log (names no tenant). */
  reason: string;
}

/** Thrown before signing when the tenant's stored tree is not the one its last checkpoint signed. */
export class LogForkRefusedError extends Error {
  override readonly name = 'LogForkRefusedError';
  readonly fault: LogFault;

  constructor(fault: LogFault) {
    super(
      `refusing to sign: ${fault.reason} (leaves ${fault.firstIndex}..${fault.endIndex - 1} of ${fault.treeSize})`,
    );
    this.fault = fault;
  }
}

/**
 * Checks, before anything is signed on top of it, that the tenant's stored tree of `size` leaves (read
 * through `tree`, whose tiles the append then reuses) is the tree of its last signed checkpoint: that
 * checkpoint's note verifies with `verifier`, states `size`, and its root hash is the one recomputed from
 * the stored hashes. Throws LogForkRefusedError otherwise, naming the leaves whose hashes differ as narrowly
 * as the earlier checkpoints allow.
 *
 * Cost: one checkpoint row and one Ed25519 verification, and the root of `size` from the stored subtree
 * hashes: one tile per tile level (the right edge's tiles, ⌈log₂₅₆ n⌉ of them, which the append reads
 * anyway and finds cached), at most 255 SHA-256 per level. Those are exactly the hashes an append reads
 * from the old tree, so a tree that passes cannot lead the signer onto a fork; an altered hash inside a
 * complete tile is never read again by the sequencer (its root sits one level up), and is caught by the
 * proofs that read it.
 */
export async function checkSignedTree(
  db: Kysely<Database>,
  tenantId: string,
  tree: TileTree,
  size: number,
  verifier: NoteVerifier,
): Promise<void> {
  const signed = await signedTree(db, tenantId, verifier);
  if (signed === undefined) {
    if (size === 0) return;
    throw new LogForkRefusedError({
      treeSize: size,
      firstIndex: 0,
      endIndex: size,
      reason: `${size} leaves are stored but no signed checkpoint verifies`,
    });
  }
  if (signed.treeSize !== size) {
    throw new LogForkRefusedError({
      treeSize: signed.treeSize,
      firstIndex: Math.min(size, signed.treeSize),
      endIndex: Math.max(size, signed.treeSize),
      reason: `the stored tree has ${size} leaves but the last signed checkpoint ${signed.treeSize}`,
    });
  }
  if (size === 0) return;
  const root = await storedRoot(tree, size);
  if (root !== undefined && equalHashes(root, signed.rootHash)) return;
  const [firstIndex, endIndex] = await narrow(db, tenantId, size, verifier);
  throw new LogForkRefusedError({
    treeSize: size,
    firstIndex,
    endIndex,
    reason:
      root === undefined
        ? `tiles of the tree of ${size} leaves are missing or short`
        : `the root of the stored tree of ${size} leaves differs from the signed one`,
  });
}

/** The tenant's last checkpoint (or the one of `treeSize`) if its note verifies; undefined otherwise or if none. */
async function signedTree(
  db: Kysely<Database>,
  tenantId: string,
  verifier: NoteVerifier,
  treeSize?: number,
): Promise<{ treeSize: number; rootHash: Uint8Array } | undefined> {
  const stored = await selectCheckpoint(db, tenantId, treeSize);
  if (stored === undefined) return undefined;
  try {
    // The note, not the row's columns: a database owner can rewrite a root_hash, not forge a signature.
    const { treeSize: size, rootHash } = parseCheckpoint((await openNote(stored.note, [verifier])).text);
    return { treeSize: size, rootHash };
  } catch {
    return undefined;
  }
}

async function storedRoot(tree: TileTree, size: number): Promise<Uint8Array | undefined> {
  try {
    return await treeHash(tree, size);
  } catch (error) {
    if (error instanceof TreeStorageError) return undefined;
    throw error;
  }
}

/**
 * The leaves [first, end) where the altered hashes lie: a binary search over the tenant's earlier
 * checkpoints for the largest whose root still recomputes (first) and the smallest that does not (end).
 * Whatever the search visits, a checkpoint of m leaves that recomputes vouches for every stored hash that
 * covers only leaves below m and that the check at `size` reads; so some leaf in [first, end) is covered by
 * an altered hash. Only run on a failed check: O(log c · log n) reads for c checkpoints.
 */
async function narrow(
  db: Kysely<Database>,
  tenantId: string,
  size: number,
  verifier: NoteVerifier,
): Promise<[number, number]> {
  const sizes = (await selectCheckpointSizes(db, tenantId)).filter((m) => m > 0 && m < size);
  let [first, end] = [0, size];
  let [low, high] = [0, sizes.length - 1];
  while (low <= high) {
    const middle = (low + high) >> 1;
    const m = sizes[middle] as number;
    const signed = await signedTree(db, tenantId, verifier, m);
    const tree = new TileTree((level, index) => selectTile(db, tenantId, level, index));
    const root = await storedRoot(tree, m);
    if (signed !== undefined && root !== undefined && equalHashes(root, signed.rootHash)) {
      first = m;
      low = middle + 1;
    } else {
      end = m;
      high = middle - 1;
    }
  }
  return [first, end];
}

/**
 * Checks the tenant's stored tree as it is now against its last signed checkpoint, as the sequencer does
 * before signing: the fault found, or undefined when the stored hashes recompute it.
 */
export async function recheckTenantLog(
  db: Kysely<Database>,
  tenantId: string,
  verifier: NoteVerifier,
): Promise<LogFault | undefined> {
  const tree = new TileTree((level, index) => selectTile(db, tenantId, level, index));
  try {
    await checkSignedTree(db, tenantId, tree, await selectTreeSize(db, tenantId), verifier);
    return undefined;
  } catch (error) {
    if (error instanceof LogForkRefusedError) return error.fault;
    throw error;
  }
}

/** What clearing a tenant's faults did: `cleared` faults, or `refused` with the fault still there. */
export type ClearLogFaultOutcome = { cleared: number } | { refused: LogFault };

/**
 * The operator's action after restoring a tenant's log data: checks the stored tree again and, only when
 * it recomputes the last signed checkpoint, clears the tenant's open faults, so the sequencer signs for it
 * again from its next round. Refuses (clearing nothing) while the data still does not match.
 */
export async function clearLogFault(
  db: Kysely<Database>,
  tenantId: string,
  verifier: NoteVerifier,
  now: Date,
): Promise<ClearLogFaultOutcome> {
  const fault = await recheckTenantLog(db, tenantId, verifier);
  if (fault !== undefined) return { refused: fault };
  return { cleared: await clearLogFaults(db, tenantId, now) };
}
