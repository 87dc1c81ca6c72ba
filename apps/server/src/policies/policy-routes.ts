import type { operations } from '@scenario-scoring/api-types';
import { effectivePolicy } from '@scenario-scoring/engine';
import type { RequestHandler } from 'express';

type Operation = operations['getPolicy'];
type Params = Operation['parameters']['path'];
type Reply = Operation['responses'][200]['content']['application/json'];

/** `GET /v1/scoring/policies/{jurisdiction}`: the effective policy, its own entry or its country's or `default`. */
export const policyRoute: RequestHandler<Params, Reply> = (req, res) => {
  res.json(effectivePolicy(req.params.jurisdiction));
};
