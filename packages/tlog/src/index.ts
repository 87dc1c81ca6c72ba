export { type Checkpoint, CheckpointFormatError, formatCheckpoint, parseCheckpoint } from './checkpoint.js';
export {
  CosignatureSigner,
  cosignatureTimestamp,
  cosignedMessage,
  parseCosignatureVerifierKey,
} from './cosignature.js';
export { fromBase64, toBase64, toHex } from './encoding.js';
export {
  emptyTreeHash,
  equalHashes,
  HASH_SIZE,
  type Hash,
  interiorHashes,
  nodeHash,
  perfectRoot,
  recordHash,
  sha256,
  splitPoint,
} from './hash.js';
export {
  formatSignatureLine,
  NoteError,
  type NoteSignature,
  NoteSigner,
  type NoteVerifier,
  type OpenedNote,
  openNote,
  parseVerifierKey,
  signNote,
  type TextSigner,
} from './note.js';
export {
  type LoadedPolicy,
  loadPolicy,
  type Policy,
  PolicyError,
  type PolicyGroup,
  type PolicyLog,
  type PolicyWitness,
  parsePolicy,
  quorumSatisfied,
  type VerifiedCheckpoint,
  verifyCheckpoint,
} from './policy.js';
export { checkRecord, checkTree, ProofError, proveRecord, proveTree } from './proof.js';
export {
  type HashReader,
  type NewTile,
  type SharedTiles,
  TILE_HEIGHT,
  TILE_WIDTH,
  type TileBatchReader,
  type TileCoordinates,
  TileHashCache,
  type TileReader,
  TileTree,
  TreeStorageError,
  tileHashes,
  tilesForAppend,
  treeHash,
} from './tile.js';
export { formatTlogProof, parseTlogProof, type TlogProof, TlogProofFormatError } from './tlog-proof.js';
