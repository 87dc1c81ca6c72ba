export { type Checkpoint, CheckpointFormatError, formatCheckpoint, parseCheckpoint } from './checkpoint.js';
export { fromBase64, toBase64, toHex } from './encoding.js';
export {
  emptyTreeHash,
  equalHashes,
  HASH_SIZE,
  type Hash,
  nodeHash,
  perfectRoot,
  recordHash,
  sha256,
  splitPoint,
} from './hash.js';
export {
  NoteError,
  type NoteSignature,
  NoteSigner,
  type NoteVerifier,
  type OpenedNote,
  openNote,
  parseVerifierKey,
  signNote,
} from './note.js';
export { checkRecord, checkTree, ProofError, proveRecord, proveTree } from './proof.js';
export {
  type HashReader,
  type NewTile,
  TILE_HEIGHT,
  TILE_WIDTH,
  type TileReader,
  TileTree,
  TreeStorageError,
  tileHashes,
  tilesForAppend,
  treeHash,
} from './tile.js';
