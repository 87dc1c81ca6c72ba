import { Webhook } from 'standardwebhooks';
import type { WebhookEvent } from './api-types.js';

/** Why a delivery was refused, for code to branch on (the message says it for people). */
export type WebhookVerificationReason =
  /** `webhook-id`, `webhook-timestamp` or `webhook-signature` is absent or empty. */
  | 'missing_headers'
  /** `webhook-timestamp` is not a number of seconds. */
  | 'invalid_headers'
  /** The timestamp is more than 5 minutes before or after this clock: a replay, or a clock far off. */
  | 'stale_timestamp'
  /** No signature in `webhook-signature` is by this secret over these exact bytes. */
  | 'invalid_signature'
  /** Authentic, but not a JSON event `{id, type, timestamp, data}`. */
  | 'malformed_body';

/** Thrown when a webhook delivery is not authentic or not an event; `reason` says which check failed. */
export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
  constructor(
    readonly reason: WebhookVerificationReason,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The headers of a received request: a fetch `Headers`, or Node's `IncomingMessage.headers`. */
export type ReceivedHeaders = Headers | Record<string, string | readonly string[] | undefined>;

const HEADER_NAMES = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;
type HeaderName = (typeof HEADER_NAMES)[number];

function webhookHeaders(headers: ReceivedHeaders): Record<HeaderName, string> {
  const pick = (name: string): string => {
    if (headers instanceof Headers) return headers.get(name) ?? '';
    const value = headers[name] ?? Object.entries(headers).find(([k]) => k.toLowerCase() === name)?.[1];
    return typeof value === 'string' ? value : (value?.join(' ') ?? '');
  };
  return Object.fromEntries(HEADER_NAMES.map((name) => [name, pick(name)])) as Record<HeaderName, string>;
}

/**
 * The reason behind one of standardwebhooks' (1.1) verification messages. Missing headers never get that
 * far: `verifyWebhook` refuses them first, naming them.
 */
function reasonOf(message: string): WebhookVerificationReason {
  if (/timestamp too (old|new)/i.test(message)) return 'stale_timestamp';
  if (/invalid signature headers/i.test(message)) return 'invalid_headers';
  return 'invalid_signature';
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Parses a verified body, refusing anything that is not an event envelope. */
function parseEvent(body: string): WebhookEvent {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch (cause) {
    throw new WebhookVerificationError('malformed_body', 'The webhook body is not JSON.', { cause });
  }
  const envelope =
    isObject(parsed) &&
    typeof parsed.id === 'string' &&
    typeof parsed.type === 'string' &&
    typeof parsed.timestamp === 'string' &&
    isObject(parsed.data);
  if (!envelope) {
    throw new WebhookVerificationError(
      'malformed_body',
      'The webhook body is not an event: it needs a string id, type and timestamp and an object data.',
    );
  }
  return parsed as WebhookEvent;
}

/**
 * Verifies a webhook delivery with the Standard Webhooks library and returns its event, typed by `type`.
 * `payload` must be the raw body exactly as received (parse nothing before verifying); `secret` is the
 * webhook's `whsec_…` secret. A signature by any secret valid during a rotation is accepted.
 * Throws {@link WebhookVerificationError} (with its `reason`) when the delivery is not authentic or not
 * an event, and TypeError for a bad secret. Events of a type newer than this client still verify: keep a
 * default branch when you switch on `type`.
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
  const received = webhookHeaders(headers);
  const missing = HEADER_NAMES.filter((name) => received[name] === '');
  if (missing.length > 0) {
    throw new WebhookVerificationError('missing_headers', `Missing required headers: ${missing.join(', ')}.`);
  }
  const body = typeof payload === 'string' ? payload : new TextDecoder().decode(payload);
  try {
    webhook.verify(body, received, { jsonParse: false });
  } catch (cause) {
    const message = cause instanceof Error ? cause.message : String(cause);
    throw new WebhookVerificationError(reasonOf(message), `Webhook verification failed: ${message}`, {
      cause,
    });
  }
  return parseEvent(body);
}
