import type { Clock } from '../common/clock.js';
import { replyCreated } from '../http/created-reply.js';
import type { OperationHandler, OperationRoutes } from '../http/operation-route.js';
import {
  createErasure,
  type ErasureServiceDeps,
  getErasure,
  listErasureLogCids,
  listSubjectRecords,
} from './erasure-service.js';

/**
 * `POST /v1/erasures`, `GET /v1/erasures/{id}`, `GET /v1/erasures/{id}/log-cids`, `POST /v1/subjects/records`
 * (a read, the subject in the body).
 */
export function erasureRoutes(
  deps: ErasureServiceDeps,
  clock: Clock,
): Pick<OperationRoutes, 'createErasure' | 'getErasure' | 'listErasureLogCids' | 'listSubjectRecords'> {
  const create: OperationHandler<'createErasure'> = async (req, res) => {
    const { tenantId, keyId } = res.locals.apiKey;
    const caller = { tenantId, keyId, idempotencyKey: req.get('Idempotency-Key') };
    const erasure = await createErasure(deps, caller, req.body, clock.now());
    replyCreated(res, 202, `/v1/erasures/${erasure.value.id}`, erasure);
  };
  const get: OperationHandler<'getErasure'> = async (req, res) => {
    res.json(await getErasure(deps, res.locals.apiKey.tenantId, req.params.id));
  };
  const erased: OperationHandler<'listErasureLogCids'> = async (req, res) => {
    res.json(await listErasureLogCids(deps, res.locals.apiKey.tenantId, req.params.id, req.query));
  };
  const list: OperationHandler<'listSubjectRecords'> = async (req, res) => {
    res.json(await listSubjectRecords(deps, res.locals.apiKey.tenantId, req.body));
  };
  return { createErasure: create, getErasure: get, listErasureLogCids: erased, listSubjectRecords: list };
}
