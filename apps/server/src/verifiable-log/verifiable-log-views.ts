import type { components } from '@scenario-scoring/api-types';
import type { CosignedCheckpoint } from './root-log.js';
import type { RootInclusionProof } from './root-log-service.js';
import type { ConsistencyProof, InclusionProof } from './verifiable-log-service.js';
import type { StoredCheckpoint } from './verifiable-log-store.js';

type Schemas = components['schemas'];

/** A stored checkpoint as the API shows it: its body's fields beside the signed note. */
export function checkpointView(checkpoint: StoredCheckpoint): Schemas['LogCheckpoint'] {
  return {
    origin: checkpoint.note.slice(0, checkpoint.note.indexOf('\n')),
    tree_size: checkpoint.treeSize,
    root_hash: base64(checkpoint.rootHash),
    note: checkpoint.note,
  };
}

export function inclusionProofView(proof: InclusionProof): Schemas['InclusionProof'] {
  return {
    log_cid: proof.cid,
    leaf_index: proof.leafIndex,
    tree_size: proof.checkpoint.treeSize,
    inclusion_path: proof.path.map(base64),
    checkpoint: checkpointView(proof.checkpoint),
  };
}

export function consistencyProofView(proof: ConsistencyProof): Schemas['ConsistencyProof'] {
  return {
    from_size: proof.from.treeSize,
    to_size: proof.to.treeSize,
    consistency_path: proof.path.map(base64),
    from_checkpoint: checkpointView(proof.from),
    to_checkpoint: checkpointView(proof.to),
  };
}

export function tileView(tile: { level: number; index: number; hashes: Uint8Array[] }): Schemas['LogTile'] {
  return { level: tile.level, index: tile.index, width: tile.hashes.length, hashes: tile.hashes.map(base64) };
}

function base64(hash: Uint8Array): string {
  return Buffer.from(hash).toString('base64');
}

/** A root checkpoint as the API shows it: its body's fields, the note with cosignatures and the cosigners. */
export function rootCheckpointView(checkpoint: CosignedCheckpoint): Schemas['RootCheckpoint'] {
  return { ...checkpointView(checkpoint), cosigners: checkpoint.cosigners };
}

/** A root inclusion proof as the API shows it. */
export function rootInclusionProofView(proof: RootInclusionProof): Schemas['RootInclusionProof'] {
  return {
    tenant_checkpoint: checkpointView(proof.tenantCheckpoint),
    leaf_index: proof.leafIndex,
    inclusion_path: proof.path.map(base64),
    root_checkpoint: rootCheckpointView(proof.rootCheckpoint),
  };
}

/** A root consistency proof as the API shows it. */
export function rootConsistencyProofView(proof: {
  path: Uint8Array[];
  from: CosignedCheckpoint;
  to: CosignedCheckpoint;
}): Schemas['RootConsistencyProof'] {
  return {
    from_size: proof.from.treeSize,
    to_size: proof.to.treeSize,
    consistency_path: proof.path.map(base64),
    from_checkpoint: rootCheckpointView(proof.from),
    to_checkpoint: rootCheckpointView(proof.to),
  };
}
