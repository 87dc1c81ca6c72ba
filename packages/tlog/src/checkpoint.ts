import { fromBase64, toBase64 } from './encoding.js';
import { HASH_SIZE, type Hash } from './hash.js';

/** What a C2SP tlog-checkpoint says: the log's origin, its tree size and the root hash of that tree. */
export interface Checkpoint {
  origin: string;
  treeSize: number;
  rootHash: Hash;
}

/** Thrown by {@link parseCheckpoint} for text that is not a tlog-checkpoint body. */
export class CheckpointFormatError extends Error {
  override readonly name = 'CheckpointFormatError';
}

/**
 * The C2SP tlog-checkpoint body of `checkpoint`: origin, decimal tree size and base64 root hash, each on
 * its own line ending in a newline (the text a signed note signs). Throws a RangeError for an origin
 * that is empty or holds a newline, a size that is not a safe non-negative integer, or a hash that is not
 * 32 bytes.
 */
export function formatCheckpoint(checkpoint: Checkpoint): string {
  const { origin, treeSize, rootHash } = checkpoint;
  if (origin === '' || origin.includes('\n')) throw new RangeError('an origin is one non-empty line');
  if (!Number.isSafeInteger(treeSize) || treeSize < 0) throw new RangeError(`tree size ${treeSize}`);
  if (rootHash.length !== HASH_SIZE) throw new RangeError(`a root hash is ${HASH_SIZE} bytes`);
  return `${origin}\n${treeSize}\n${toBase64(rootHash)}\n`;
}

/**
 * The checkpoint a tlog-checkpoint body states (lines after the third, extension lines, are allowed and
 * ignored). Throws a CheckpointFormatError unless the text starts with a non-empty origin, a decimal tree
 * size without leading zeros and a base64 32-byte root hash, each line ending in a newline.
 */
export function parseCheckpoint(text: string): Checkpoint {
  const [origin = '', size = '', root = '', ...rest] = text.split('\n');
  const rootHash = fromBase64(root);
  if (
    origin === '' ||
    rest.length === 0 ||
    !/^(0|[1-9][0-9]*)$/.test(size) ||
    !Number.isSafeInteger(Number(size)) ||
    rootHash?.length !== HASH_SIZE
  ) {
    throw new CheckpointFormatError('not a tlog-checkpoint (origin, tree size, root hash)');
  }
  return { origin, treeSize: Number(size), rootHash };
}
