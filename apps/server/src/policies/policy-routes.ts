import { effectivePolicy } from '@scenario-scoring/engine';
import type { OperationHandler } from '../http/operation-route.js';

/** `GET /v1/scoring/policies/{jurisdiction}`: the effective policy, its own entry or its country's or `default`. */
export const policyRoute: OperationHandler<'getPolicy'> = (req, res) => {
  res.json(effectivePolicy(req.params.jurisdiction));
};
