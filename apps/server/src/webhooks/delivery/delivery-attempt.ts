import type { Clock } from '../../common/clock.js';
import type { Metrics } from '../../metrics/metrics.js';
import { tracing } from '../../tracing/tracing.js';
import type { WebhookConfig } from '../webhook-config.js';
import type { ClaimedDelivery } from './delivery-claims.js';
import { nextDeliveryState } from './delivery-outcome.js';
import type { Claim, DeliveryWrite } from './delivery-recorder.js';
import type { DeliveryRequest, DeliverySender, SentAttempt } from './delivery-sender.js';
import { type EndpointOutcome, endpointOutcome } from './endpoint-throttle.js';
import { judgeAttempt } from './retry-schedule.js';

const NO_SECRET_ERROR = 'no signing secret could be opened (was SECRETS_KEY changed?)';

/** What an attempt needs besides its delivery. */
export interface AttemptContext {
  send: DeliverySender;
  clock: Clock;
  config: WebhookConfig;
  /** Counts attempts by result and observes the delivery lag. */
  metrics?: Pick<Metrics, 'deliveryAttempts' | 'deliveryLagSeconds'> | undefined;
}

/** The write that cancels a claimed delivery whose webhook is no longer active: no request is made. */
export function cancellation(delivery: ClaimedDelivery): DeliveryWrite {
  return { kind: 'cancel', claim: claimOf(delivery) };
}

/**
 * Makes one signed attempt of a claimed delivery (of an active webhook) and decides what follows it:
 * resolves with the write that records it (the attempt, the delivery's next state) and what the attempt
 * says of its endpoint. Never sends unsigned: with no secret to sign with, the attempt fails without a
 * request. Never rejects when the sender does not (a network error is an attempt with status 0).
 */
export async function attemptDelivery(
  delivery: ClaimedDelivery,
  { send, clock, config, metrics }: AttemptContext,
): Promise<{ write: DeliveryWrite; outcome: EndpointOutcome }> {
  const attemptedAt = clock.now();
  metrics?.deliveryLagSeconds.observe(Math.max(0, attemptedAt.getTime() - Date.parse(delivery.dueAt)) / 1000);
  const sent: SentAttempt =
    delivery.secrets.length === 0
      ? { statusCode: 0, error: NO_SECRET_ERROR, durationMs: 0, responseBody: null }
      : await sendTraced(send, delivery, {
          url: delivery.url,
          eventId: delivery.eventId,
          payload: delivery.payload,
          secrets: delivery.secrets,
          timestampSeconds: Math.floor(attemptedAt.getTime() / 1000),
        });
  const now = clock.now();
  const verdict = judgeAttempt(sent, now);
  const position = {
    failedScheduledAttempts: delivery.failedScheduledAttempts,
    trigger: delivery.trigger,
    succeededBefore: delivery.succeededBefore,
  };
  const next = nextDeliveryState(config, position, verdict, now, Math.random);
  metrics?.deliveryAttempts.inc({ result: attemptResult(sent) });
  return {
    write: {
      kind: 'attempt',
      // Its event's type only matters for an answer to store (delivery-recorder.ts, mayEchoASubject).
      claim: claimOf(delivery, sent.responseBody !== null),
      trigger: delivery.trigger,
      attemptedAt,
      sent,
      verdict,
      next,
    },
    outcome: endpointOutcome(sent, delivery.secrets.length > 0),
  };
}

/**
 * Sends an attempt; with tracing on, in a trace of its own linked to the request that raised the event,
 * with the attempt span's `traceparent` on the POST (unless WEBHOOK_SEND_TRACEPARENT=false).
 */
function sendTraced(
  send: DeliverySender,
  delivery: ClaimedDelivery,
  request: DeliveryRequest,
): Promise<SentAttempt> {
  if (!tracing) return send(request);
  return tracing.inDeliverySpan(
    delivery.traceparent,
    {
      'webhook.id': delivery.webhookId,
      'webhook.event_id': delivery.eventId,
      'webhook.delivery_id': delivery.id,
    },
    async (traceparent) => {
      const sent = await send(traceparent === undefined ? request : { ...request, traceparent });
      return sent;
    },
  );
}

function claimOf(delivery: ClaimedDelivery, withEventType = false): Claim {
  const eventType = withEventType ? eventTypeOf(delivery.payload) : undefined;
  return {
    deliveryId: delivery.id,
    webhookId: delivery.webhookId,
    lockedUntil: delivery.lockedUntil,
    tenantId: delivery.tenantId,
    ...(eventType !== undefined && { eventType }),
  };
}

/** The `type` of an event's stored JSON body; undefined if it has none (the recorder then checks its answer). */
function eventTypeOf(payload: string): string | undefined {
  try {
    const { type } = JSON.parse(payload) as { type?: unknown };
    return typeof type === 'string' ? type : undefined;
  } catch {
    return undefined;
  }
}

/** The `result` label of an attempt: succeeded, failed (an HTTP answer other than 2xx), timeout or network_error. */
function attemptResult(sent: { statusCode: number; error: string | null }): string {
  if (sent.statusCode >= 200 && sent.statusCode < 300 && sent.error === null) return 'succeeded';
  if (sent.statusCode > 0) return 'failed';
  return sent.error === 'timeout' ? 'timeout' : 'network_error';
}
