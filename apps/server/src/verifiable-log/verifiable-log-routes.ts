import type { NoteSigner } from '@scenario-scoring/tlog';
import type { Response } from 'express';
import type { OperationHandler, OperationRoutes } from '../http/operation-route.js';
import type { Storage } from '../storage/storage.js';
import { findCheckpoint, findTile, proveConsistency, proveInclusion } from './verifiable-log-service.js';
import {
  checkpointView,
  consistencyProofView,
  inclusionProofView,
  tileView,
} from './verifiable-log-views.js';

const tenant = (res: Pick<Response, 'locals'>) => res.locals.apiKey.tenantId;

/** The verifiable log's operations: checkpoints and proofs of the caller's tenant, and the public verifier key. */
export function verifiableLogRoutes(deps: {
  storage: Pick<Storage, 'db'>;
  signer: Pick<NoteSigner, 'verifierKey' | 'name'>;
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
  return {
    getLogCheckpoint: checkpoint,
    getInclusionProof: inclusion,
    getConsistencyProof: consistency,
    getLogTile: tile,
    getLogVerifierKey: verifierKey,
  };
}
