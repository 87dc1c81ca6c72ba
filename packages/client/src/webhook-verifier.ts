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

/** How far `webhook-timestamp` may be from this clock: the Standard Webhooks tolerance (its library's too). */
const WEBHOOK_TOLERANCE_SECONDS = 5 * 60;

/**
 * Checks `webhook-timestamp` the way the library does (integer seconds, within the tolerance) before the
 * library runs, so each refusal's reason comes from our own check, never from parsing the library's
 * messages; what the library still refuses is then the signature.
 */
function checkTimestamp(header: string, nowMs: number): void {
  const seconds = Number.parseInt(header, 10);
  if (Number.isNaN(seconds)) {
    throw new WebhookVerificationError('invalid_headers', 'webhook-timestamp is not a number of seconds.');
  }
  const now = Math.floor(nowMs / 1000);
  if (now - seconds > WEBHOOK_TOLERANCE_SECONDS || seconds - now > WEBHOOK_TOLERANCE_SECONDS) {
    throw new WebhookVerificationError(
      'stale_timestamp',
      `webhook-timestamp is more than ${WEBHOOK_TOLERANCE_SECONDS} s from this clock: a replay, or a clock far off.`,
    );
  }
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
  checkTimestamp(received['webhook-timestamp'], Date.now());
  const body = typeof payload === 'string' ? payload : new TextDecoder().decode(payload);
  try {
    webhook.verify(body, received, { jsonParse: false });
  } catch (cause) {
    const message = cause instanceof Error ? cause.message : String(cause);
    throw new WebhookVerificationError('invalid_signature', `Webhook verification failed: ${message}`, {
      cause,
    });
  }
  return parseEvent(body);
}
