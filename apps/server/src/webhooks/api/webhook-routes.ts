import type { OperationId, operations } from '@scenario-scoring/api-types';
import type { Request, RequestHandler, Response } from 'express';
import { readPageRequest } from '../../http/list-cursor.js';
import { sendOutcome } from '../../idempotency/idempotent-create.js';
import { listAttempts, listDeliveries, redeliver, sendTestEvent } from './delivery-history-service.js';
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

type Body<Id extends OperationId> = operations[Id] extends {
  requestBody?: { content: { 'application/json': infer B } };
}
  ? B
  : never;
type WebhookParams = { id: string };
type DeliveryParams = { id: string; delivery_id: string };

/** A handler typed by its operation's path parameters and body (validated before it runs). */
type Handler<Params, B = unknown> = (req: Request<Params, unknown, B>, res: Response) => Promise<void>;

const tenant = (res: Response) => res.locals.apiKey.tenantId;
const deliveryIds = (params: DeliveryParams) => ({ webhookId: params.id, deliveryId: params.delivery_id });

/**
 * The webhook operations, by operationId. Each parses what the contract validator already checked,
 * calls its use case, and replies.
 */
export function webhookRoutes(deps: WebhookServiceDeps): Partial<Record<OperationId, RequestHandler>> {
  const register: Handler<never, Body<'registerWebhook'>> = async (req, res) => {
    const caller = { tenantId: tenant(res), keyId: res.locals.apiKey.keyId };
    const request = { body: req.body, idempotencyKey: req.get('Idempotency-Key') };
    sendOutcome(res, await registerWebhook(deps, caller, request));
  };
  const list: Handler<never> = async (req, res) => {
    res.json(await listWebhooks(deps, tenant(res), readPageRequest(req.query, 'wh')));
  };
  const get: Handler<WebhookParams> = async (req, res) => {
    res.json(toWebhook(await requireWebhook(deps.storage.db, tenant(res), req.params.id)));
  };
  const update: Handler<WebhookParams, Body<'updateWebhook'>> = async (req, res) => {
    res.json(await updateWebhook(deps, tenant(res), req.params.id, req.body));
  };
  const remove: Handler<WebhookParams> = async (req, res) => {
    await deleteWebhook(deps, tenant(res), req.params.id);
    res.status(204).end();
  };
  const rotate: Handler<WebhookParams, Body<'rotateWebhookSecret'> | undefined> = async (req, res) => {
    res.json(await rotateWebhookSecret(deps, tenant(res), req.params.id, req.body));
  };
  const test: Handler<WebhookParams> = async (req, res) => {
    res.status(202).json(await sendTestEvent(deps, tenant(res), req.params.id));
  };
  const deliveries: Handler<WebhookParams> = async (req, res) => {
    const page = readPageRequest(req.query, 'dlv');
    res.json(await listDeliveries(deps, tenant(res), req.params.id, page));
  };
  const attempts: Handler<DeliveryParams> = async (req, res) => {
    const page = readPageRequest(req.query, 'att');
    res.json(await listAttempts(deps, tenant(res), deliveryIds(req.params), page));
  };
  const redeliverOne: Handler<DeliveryParams> = async (req, res) => {
    res.status(202).json(await redeliver(deps, tenant(res), deliveryIds(req.params)));
  };
  const routes = {
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
  };
  return routes as unknown as Partial<Record<OperationId, RequestHandler>>;
}
