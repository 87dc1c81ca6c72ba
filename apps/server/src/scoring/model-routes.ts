import type { ModelCatalog, ScoringModel } from '@scenario-scoring/api-types';
import { catalogModel, MODEL_CATALOG } from '@scenario-scoring/engine';
import { AppError } from '../errors/app-error.js';
import type { OperationHandler } from '../http/operation-route.js';

/** `GET /v1/scoring/models`: the engine's model catalog, every released version, the current one first. */
export const listModelsRoute: OperationHandler<'listModels'> = (_req, res) => {
  // The engine's catalog is deeply frozen (readonly types); the contract's types are the same shape, mutable.
  res.json(MODEL_CATALOG as unknown as ModelCatalog);
};

/** `GET /v1/scoring/models/{model_version}`: one released version, or 404 for a version the engine does not know. */
export const getModelRoute: OperationHandler<'getModel'> = (req, res) => {
  const model = catalogModel(req.params.model_version);
  if (model === undefined) {
    throw new AppError('not_found', {
      // JSON-quoted: a path may carry control characters (`%00`), which the detail must not echo raw.
      detail: `No model version ${JSON.stringify(req.params.model_version)} exists; GET /v1/scoring/models lists the released ones.`,
    });
  }
  res.json(model as unknown as ScoringModel);
};
