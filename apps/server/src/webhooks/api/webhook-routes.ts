import type { Response } from 'express';
import { replyCreated } from '../../http/created-reply.js';
import { readPageRequest } from '../../http/list-cursor.js';
import type { OperationHandler, OperationRoutes } from '../../http/operation-route.js';
import { listAttempts, listDeliveries, redeliver, sendTestEvent } from './delivery-history-service.js';
import { replayEvents } from './webhook-replay.js';
import {
  deleteWebhook,
  listWebhooks,
  registerWebhook,
  requireWebhook,
  rotateWebhookSecret,
  updateWebhook,
  type WebhookServiceDeps,
} from './webhook-service.js';
import { toWebhook } from './webhook-views.js';

/** 202 with the body's JSON bytes as first sent, and `Idempotent-Replayed: true` on a replay. */
function replyAccepted(res: Response, accepted: { bodyJson: string; replayed: boolean }): void {
  if (accepted.replayed) res.set('Idempotent-Replayed', 'true');
  res.status(202).type('application/json').send(accepted.bodyJson);
}

type DeliveryParams = { id: string; delivery_id: string };

const tenant = (res: Pick<Response, 'locals'>) => res.locals.apiKey.tenantId;
const deliveryIds = (params: DeliveryParams) => ({ webhookId: params.id, deliveryId: params.delivery_id });

/**
 * The webhook operations, by operationId. Each parses what the contract validator already checked,
 * calls its use case, and replies.
 */
export function webhookRoutes(deps: WebhookServiceDeps): OperationRoutes {
  const register: OperationHandler<'registerWebhook'> = async (req, res) => {
    const caller = { tenantId: tenant(res), keyId: res.locals.apiKey.keyId };
    const request = { body: req.body, idempotencyKey: req.get('Idempotency-Key') };
    const registered = await registerWebhook(deps, caller, request);
    replyCreated(res, 201, `/v1/webhooks/${registered.value.id}`, registered);
  };
  const list: OperationHandler<'listWebhooks'> = async (req, res) => {
    res.json(await listWebhooks(deps, tenant(res), readPageRequest(req.query, 'wh')));
  };
  const get: OperationHandler<'getWebhook'> = async (req, res) => {
    res.json(toWebhook(await requireWebhook(deps.storage.db, tenant(res), req.params.id)));
  };
  const update: OperationHandler<'updateWebhook'> = async (req, res) => {
    res.json(await updateWebhook(deps, tenant(res), req.params.id, req.body));
  };
  const remove: OperationHandler<'deleteWebhook'> = async (req, res) => {
    await deleteWebhook(deps, tenant(res), req.params.id);
    res.status(204).end();
  };
  const rotate: OperationHandler<'rotateWebhookSecret'> = async (req, res) => {
    res.json(await rotateWebhookSecret(deps, tenant(res), req.params.id, req.body));
  };
  const test: OperationHandler<'sendWebhookTest'> = async (req, res) => {
    res.status(202).json(await sendTestEvent(deps, tenant(res), req.params.id));
  };
  const deliveries: OperationHandler<'listWebhookDeliveries'> = async (req, res) => {
    const page = readPageRequest(req.query, 'dlv');
    res.json(await listDeliveries(deps, tenant(res), req.params.id, page));
  };
  const attempts: OperationHandler<'listDeliveryAttempts'> = async (req, res) => {
    const page = readPageRequest(req.query, 'att');
    res.json(await listAttempts(deps, tenant(res), deliveryIds(req.params), page));
  };
  const redeliverOne: OperationHandler<'redeliverDelivery'> = async (req, res) => {
    res.status(202).json(await redeliver(deps, tenant(res), deliveryIds(req.params)));
  };
  const replay: OperationHandler<'replayWebhookEvents'> = async (req, res) => {
    const caller = { tenantId: tenant(res), keyId: res.locals.apiKey.keyId };
    const request = { webhookId: req.params.id, body: req.body, idempotencyKey: req.get('Idempotency-Key') };
    const queued = await replayEvents(deps, caller, request);
    replyAccepted(res, queued);
  };
  return {
    registerWebhook: register,
    listWebhooks: list,
    getWebhook: get,
    updateWebhook: update,
    deleteWebhook: remove,
    rotateWebhookSecret: rotate,
    sendWebhookTest: test,
    listWebhookDeliveries: deliveries,
    listDeliveryAttempts: attempts,
    redeliverDelivery: redeliverOne,
    replayWebhookEvents: replay,
  };
}
