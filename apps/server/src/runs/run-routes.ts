import type { Clock } from '../common/clock.js';
import { replyCreated } from '../http/created-reply.js';
import type { OperationHandler } from '../http/operation-route.js';
import { scoringPolicy, type UnknownJurisdictionMode } from '../policies/scoring-policy.js';
import {
  createRun,
  DEFAULT_RESULTS_LIMIT,
  getRun,
  listRunResults,
  type RunServiceDeps,
} from './run-service.js';
import { decodeResultsCursor } from './run-view.js';

/**
 * `POST /v1/scoring/runs`: the items were validated against the contract (each error names its index);
 * the run is stored `queued` with its Idempotency-Key record, and this instance's run workers are woken.
 * A deployment that refuses jurisdictions without a policy of their own refuses the run (422
 * `unknown_jurisdiction`, naming the first such item) before anything is stored.
 */
export function createRunRoute(
  deps: RunServiceDeps,
  clock: Clock,
  unknownJurisdiction: UnknownJurisdictionMode = 'default',
): OperationHandler<'createRun'> {
  return async (req, res) => {
    if (unknownJurisdiction === 'refuse')
      for (const [index, item] of req.body.items.entries())
        scoringPolicy(item.context.jurisdiction, unknownJurisdiction, index);
    const { tenantId, keyId } = res.locals.apiKey;
    const caller = { tenantId, keyId, idempotencyKey: req.get('Idempotency-Key') };
    const run = await createRun(deps, caller, req.body, clock.now());
    replyCreated(res, 202, `/v1/scoring/runs/${run.value.id}`, run);
  };
}

/** `GET /v1/scoring/runs/{id}`: another tenant's run answers 404 like an unknown one. */
export function getRunRoute(deps: Pick<RunServiceDeps, 'storage'>): OperationHandler<'getRun'> {
  return async (req, res) => {
    res.json(await getRun(deps, res.locals.apiKey.tenantId, req.params.id));
  };
}

/** `GET /v1/scoring/runs/{id}/results`: attempted items in item order, a page at a time. */
export function listRunResultsRoute(
  deps: Pick<RunServiceDeps, 'storage'>,
): OperationHandler<'listRunResults'> {
  return async (req, res) => {
    const page = {
      after: decodeResultsCursor(req.query.cursor),
      limit: req.query.limit ?? DEFAULT_RESULTS_LIMIT,
    };
    res.json(await listRunResults(deps, res.locals.apiKey.tenantId, req.params.id, page));
  };
}
