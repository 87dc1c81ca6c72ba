import type { NoteSigner } from '@scenario-scoring/tlog';
import type { Response } from 'express';
import type { OperationHandler, OperationRoutes } from '../http/operation-route.js';
import type { Storage } from '../storage/storage.js';
import { proofFile } from './proof-file.js';
import {
  findRootCheckpoint,
  proveRootConsistency,
  proveRootInclusion,
  type RootLogView,
} from './root-log-service.js';
import { findCheckpoint, findTile, proveConsistency, proveInclusion } from './verifiable-log-service.js';
import {
  checkpointView,
  consistencyProofView,
  inclusionProofView,
  rootCheckpointView,
  rootConsistencyProofView,
  rootInclusionProofView,
  tileView,
} from './verifiable-log-views.js';

const tenant = (res: Pick<Response, 'locals'>) => res.locals.apiKey.tenantId;

/**
 * The verifiable log's operations: checkpoints and proofs of the caller's tenant, its checkpoints' proofs
 * in the root log, and the public verifier key, root checkpoint and root consistency proofs.
 */
export function verifiableLogRoutes(deps: {
  storage: Pick<Storage, 'db'>;
  signer: Pick<NoteSigner, 'verifierKey' | 'name'>;
  /** Which root checkpoint is served (witness policy and fail-open or fail-closed). */
  root: RootLogView;
  /** The exact bytes of the tenant's record `cid` (404 unknown, 410 erased), for its proof file. */
  readRecord: (tenantId: string, cid: string) => Promise<Uint8Array>;
}): OperationRoutes {
  const { db } = deps.storage;
  const checkpoint: OperationHandler<'getLogCheckpoint'> = async (_req, res) => {
    res.json(checkpointView(await findCheckpoint(db, tenant(res))));
  };
  const inclusion: OperationHandler<'getInclusionProof'> = async (req, res) => {
    const size = req.query.tree_size;
    res.json(inclusionProofView(await proveInclusion(db, tenant(res), req.params.cid, size)));
  };
  const consistency: OperationHandler<'getConsistencyProof'> = async (req, res) => {
    const { from, to } = req.query;
    res.json(consistencyProofView(await proveConsistency(db, tenant(res), from, to)));
  };
  const tile: OperationHandler<'getLogTile'> = async (req, res) => {
    const { level, index } = req.params;
    res.json(tileView(await findTile(db, tenant(res), level, index, req.query.width)));
  };
  const verifierKey: OperationHandler<'getLogVerifierKey'> = async (_req, res) => {
    res.json({ verifier_key: await deps.signer.verifierKey(), key_name: deps.signer.name });
  };
  const rootCheckpoint: OperationHandler<'getRootCheckpoint'> = async (_req, res) => {
    res.json(rootCheckpointView(await findRootCheckpoint(db, deps.root)));
  };
  const rootInclusion: OperationHandler<'getRootInclusionProof'> = async (req, res) => {
    res.json(
      rootInclusionProofView(await proveRootInclusion(db, deps.root, tenant(res), req.query.tree_size)),
    );
  };
  const rootConsistency: OperationHandler<'getRootConsistencyProof'> = async (req, res) => {
    res.json(rootConsistencyProofView(await proveRootConsistency(db, req.query.from, req.query.to)));
  };
  const proofFileRoute: OperationHandler<'getLogProofFile'> = async (req, res) => {
    const { cid } = req.params;
    const record = await deps.readRecord(tenant(res), cid);
    const text = await proofFile(db, deps.root, tenant(res), cid, record);
    res.status(200).setHeader('Content-Type', 'text/plain; charset=utf-8');
    res.setHeader('Content-Disposition', `attachment; filename="${cid}.tlog-proof"`);
    res.end(text);
  };
  return {
    getLogProofFile: proofFileRoute,
    getRootCheckpoint: rootCheckpoint,
    getRootInclusionProof: rootInclusion,
    getRootConsistencyProof: rootConsistency,
    getLogCheckpoint: checkpoint,
    getInclusionProof: inclusion,
    getConsistencyProof: consistency,
    getLogTile: tile,
    getLogVerifierKey: verifierKey,
  };
}
