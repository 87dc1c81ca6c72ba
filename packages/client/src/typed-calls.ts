import type { Client } from 'openapi-fetch';
import type {
  Policy,
  paths,
  RegisteredWebhook,
  RegisterWebhookRequest,
  ReplayQueued,
  ScoreRequest,
  ScoreResponse,
} from './api-types.js';
import { type CallResult, resultOf } from './call-result.js';
import type { WebhookEventType } from './webhook-event-handler.js';

/**
 * Typed shortcuts for the calls a client makes most. Each takes its body as a plain parameter of the
 * contract's type, so TypeScript checks it as an object literal: a typo anywhere inside it
 * (`context: { utilisation: 0.3 }`) is a compile error. Through `client.POST(path, { body })` the body
 * is inferred by a generic first, and a typo in a nested object is not reported; there, write
 * `body: { … } satisfies ScoreRequest`.
 */

/** The events a webhook can ask for: known event types, or `'*'` for every type, present and future. */
export type WebhookEventFilter = ['*'] | [WebhookEventType, ...WebhookEventType[]];

/** What {@link registerWebhook} sends: the contract's request with `events` typed by event name. */
export type RegisterWebhookBody = Omit<RegisterWebhookRequest, 'events'> & { events: WebhookEventFilter };

/** Per-call options: an abort signal, and for creating calls an `Idempotency-Key`. */
export interface CallOptions {
  signal?: AbortSignal;
}

/** Options of {@link scoreSubject}: with `logInclusion`, ask for the record's inclusion proof in the answer. */
export interface ScoreCallOptions extends CallOptions {
  /**
   * Sends `Prefer: log-inclusion` (with `wait=<waitSeconds>` when given; the server caps the wait): the
   * answer then waits until the record is in a signed checkpoint and carries `data.log_inclusion`, or
   * comes without it when the wait ran out. Verify it with `verifyScoreInclusion`.
   */
  logInclusion?: boolean | { waitSeconds: number };
}

/**
 * `POST /v1/scoring/score`: the three scenarios, the levers and the `log_cid`, or the problem; with
 * `logInclusion`, also the signed checkpoint and inclusion proof of the record when it was signed in time.
 */
export async function scoreSubject(
  client: Client<paths>,
  body: ScoreRequest,
  options: ScoreCallOptions = {},
): Promise<CallResult<ScoreResponse>> {
  const { logInclusion } = options;
  const prefer =
    logInclusion === undefined || logInclusion === false
      ? undefined
      : logInclusion === true
        ? 'log-inclusion'
        : `log-inclusion, wait=${Math.max(0, Math.floor(logInclusion.waitSeconds))}`;
  const { data, error, response } = await client.POST('/v1/scoring/score', {
    body,
    ...(prefer !== undefined && { params: { header: { Prefer: prefer } } }),
    ...(options.signal && { signal: options.signal }),
  });
  return resultOf(data, error, response);
}

/** `GET /v1/scoring/policies/{jurisdiction}`: the policy that scores a jurisdiction (or `default`). */
export async function getPolicy(
  client: Client<paths>,
  jurisdiction: string,
  options: CallOptions = {},
): Promise<CallResult<Policy>> {
  const { data, error, response } = await client.GET('/v1/scoring/policies/{jurisdiction}', {
    params: { path: { jurisdiction } },
    ...(options.signal && { signal: options.signal }),
  });
  return resultOf(data, error, response);
}

/**
 * `POST /v1/webhooks/register` with `events` typed by name (a typo in an event type is a compile error).
 * Answers the webhook with its `secret` (shown here and on rotation only), or the problem
 * (`webhook_url_refused`, `validation_failed`, …). Pass an `idempotencyKey` so a retry cannot register twice.
 */
export async function registerWebhook(
  client: Client<paths>,
  body: RegisterWebhookBody,
  options: CallOptions & { idempotencyKey?: string } = {},
): Promise<CallResult<RegisteredWebhook>> {
  const { data, error, response } = await client.POST('/v1/webhooks/register', {
    body: body as RegisterWebhookRequest,
    ...(options.idempotencyKey !== undefined && { headers: { 'Idempotency-Key': options.idempotencyKey } }),
    ...(options.signal && { signal: options.signal }),
  });
  return resultOf(data, error, response);
}

/**
 * `POST /v1/webhooks/{id}/replay`: queues the webhook's events created in [`since`, `until`) again (at most
 * 7 days and 10,000 events; an event already pending is not queued twice). Answers the counts, or the
 * problem (`validation_failed` naming `since` or `until`, `not_found`). Pass an `idempotencyKey` to retry safely.
 */
export async function replayWebhookEvents(
  client: Client<paths>,
  webhookId: string,
  range: { since: Date | string; until: Date | string },
  options: CallOptions & { idempotencyKey?: string } = {},
): Promise<CallResult<ReplayQueued>> {
  const iso = (at: Date | string) => (typeof at === 'string' ? at : at.toISOString());
  const { data, error, response } = await client.POST('/v1/webhooks/{id}/replay', {
    params: { path: { id: webhookId } },
    body: { since: iso(range.since), until: iso(range.until) },
    ...(options.idempotencyKey !== undefined && { headers: { 'Idempotency-Key': options.idempotencyKey } }),
    ...(options.signal && { signal: options.signal }),
  });
  return resultOf(data, error, response);
}
