import { createHmac, createSecretKey, type KeyObject, randomBytes } from 'node:crypto';

const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 32;

/** A new signing secret: `whsec_` + base64 of 32 random bytes (Standard Webhooks). */
export function generateWebhookSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString('base64')}`;
}

/** Signing keys kept, by secret: at most this many (then the cache starts over). */
const MAX_CACHED_KEYS = 1024;
const keys = new Map<string, KeyObject>();

/**
 * The HMAC key of a `whsec_` secret (its base64-decoded part) as a KeyObject, made once per secret: given
 * the key's bytes, Node prepares a key on every call, several times the cost of the HMAC itself.
 */
function signingKey(secret: string): KeyObject {
  let key = keys.get(secret);
  if (key === undefined) {
    if (!secret.startsWith(SECRET_PREFIX)) throw new TypeError('a webhook secret starts with whsec_');
    key = createSecretKey(Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64'));
    if (keys.size >= MAX_CACHED_KEYS) keys.clear();
    keys.set(secret, key);
  }
  return key;
}

/**
 * The `webhook-signature` header of Standard Webhooks: `v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>`
 * for each secret, separated by spaces (during a rotation, the new secret and the old ones).
 */
export function signatureHeader(
  secrets: readonly string[],
  eventId: string,
  timestampSeconds: number,
  body: string,
): string {
  const signed = `${eventId}.${timestampSeconds}.${body}`;
  return secrets
    .map((secret) => `v1,${createHmac('sha256', signingKey(secret)).update(signed).digest('base64')}`)
    .join(' ');
}

/** The three Standard Webhooks headers of one attempt. */
export function webhookHeaders(
  secrets: readonly string[],
  eventId: string,
  timestampSeconds: number,
  body: string,
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  return {
    'webhook-id': eventId,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': signatureHeader(secrets, eventId, timestampSeconds, body),
  };
}
