import { Webhook } from 'standardwebhooks';
import type { WebhookEvent } from './api-types.js';

/** Thrown when a webhook delivery is not authentic: bad or missing signature, or a timestamp off by > 5 min. */
export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
}

/** The headers of a received request: a fetch `Headers`, or Node's `IncomingMessage.headers`. */
export type ReceivedHeaders = Headers | Record<string, string | readonly string[] | undefined>;

function webhookHeaders(headers: ReceivedHeaders): Record<string, string> {
  const pick = (name: string): string => {
    if (headers instanceof Headers) return headers.get(name) ?? '';
    const value = headers[name] ?? Object.entries(headers).find(([k]) => k.toLowerCase() === name)?.[1];
    return typeof value === 'string' ? value : (value?.join(' ') ?? '');
  };
  return {
    'webhook-id': pick('webhook-id'),
    'webhook-timestamp': pick('webhook-timestamp'),
    'webhook-signature': pick('webhook-signature'),
  };
}

/**
 * Verifies a webhook delivery with the Standard Webhooks library and returns its event, typed by `type`.
 * `payload` must be the raw body exactly as received (parse nothing before verifying); `secret` is the
 * webhook's `whsec_…` secret. A signature by any secret valid during a rotation is accepted.
 * Throws {@link WebhookVerificationError} when the delivery is not authentic, TypeError for a bad secret.
 */
export function verifyWebhook(
  payload: string | Uint8Array,
  headers: ReceivedHeaders,
  secret: string,
): WebhookEvent {
  let webhook: Webhook;
  try {
    webhook = new Webhook(secret);
  } catch (cause) {
    throw new TypeError('secret must be a webhook secret: "whsec_" followed by base64.', { cause });
  }
  const body = typeof payload === 'string' ? payload : new TextDecoder().decode(payload);
  try {
    return webhook.verify(body, webhookHeaders(headers)) as WebhookEvent;
  } catch (cause) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    throw new WebhookVerificationError(`Webhook verification failed: ${reason}`, { cause });
  }
}
