import type { OperationId, operations } from '@scenario-scoring/api-types';
import type { RequestHandler } from 'express';
import type { Storage } from '../storage/storage.js';
import type { CheckpointSigner } from './checkpoint-signer.js';
import { findCheckpoint, findTile, proveConsistency, proveInclusion } from './transparency-log-service.js';
import {
  checkpointView,
  consistencyProofView,
  inclusionProofView,
  tileView,
} from './transparency-log-views.js';

type InclusionQuery = NonNullable<operations['getInclusionProof']['parameters']['query']>;
type ConsistencyQuery = operations['getConsistencyProof']['parameters']['query'];

/** The verifiable log's operations: checkpoints and proofs of the caller's tenant, and the public verifier key. */
export function transparencyLogRoutes(deps: {
  storage: Pick<Storage, 'db'>;
  signer: Pick<CheckpointSigner, 'verifierKey' | 'name'>;
}): Partial<Record<OperationId, RequestHandler>> {
  const { db } = deps.storage;
  const tenant = (res: { locals: { apiKey: { tenantId: string } } }) => res.locals.apiKey.tenantId;
  return {
    getLogCheckpoint: async (_req, res) => {
      res.json(checkpointView(await findCheckpoint(db, tenant(res))));
    },
    getInclusionProof: async (req, res) => {
      // The validator checked (and coerced) the query against the contract.
      const { tree_size } = req.query as InclusionQuery;
      const cid = req.params.cid as string;
      const size = tree_size === undefined ? undefined : Number(tree_size);
      res.json(inclusionProofView(await proveInclusion(db, tenant(res), cid, size)));
    },
    getConsistencyProof: async (req, res) => {
      const { from, to } = req.query as unknown as ConsistencyQuery;
      res.json(consistencyProofView(await proveConsistency(db, tenant(res), Number(from), Number(to))));
    },
    getLogTile: async (req, res) => {
      const { width } = req.query as NonNullable<operations['getLogTile']['parameters']['query']>;
      const [level, index] = [Number(req.params.level), Number(req.params.index)];
      const tile = await findTile(
        db,
        tenant(res),
        level,
        index,
        width === undefined ? undefined : Number(width),
      );
      res.json(tileView(tile));
    },
    getLogVerifierKey: (_req, res) => {
      res.json({ verifier_key: deps.signer.verifierKey, key_name: deps.signer.name });
    },
  };
}
