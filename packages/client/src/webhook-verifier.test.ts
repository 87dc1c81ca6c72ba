import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { WebhookEvent } from './api-types.js';
import { verifyWebhook, WebhookVerificationError } from './webhook-verifier.js';

const KEY = randomBytes(32);
const SECRET = `whsec_${KEY.toString('base64')}`;

/** Signs by hand as webhooks.md says, so the test does not trust the library it checks. */
function signature(key: Buffer, id: string, timestamp: number, body: string): string {
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

function delivery(body: string, { key = KEY, timestamp = Math.floor(Date.now() / 1000) } = {}) {
  const id = 'evt_01JZ4V8Q6Y3M2N5P7R9S1T3V5X';
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signature(key, id, timestamp, body),
  };
}

const EVENT = {
  id: 'evt_01JZ4V8Q6Y3M2N5P7R9S1T3V5X',
  type: 'webhook.test',
  timestamp: '2026-03-01T12:00:00Z',
  data: { webhook_id: 'wh_01JZ4V8Q6Y3M2N5P7R9S1T3V5X' },
};
const BODY = JSON.stringify(EVENT);

describe('verifyWebhook', () => {
  it('returns the event of an authentic delivery, typed as a webhook event', () => {
    const event = verifyWebhook(BODY, delivery(BODY), SECRET);
    expect(event).toEqual(EVENT);
    expectTypeOf(event).toEqualTypeOf<WebhookEvent>();
  });

  it('reads fetch Headers, Node header records in any case, and a raw byte body', () => {
    const headers = new Headers(delivery(BODY));
    expect(verifyWebhook(new TextEncoder().encode(BODY), headers, SECRET)).toEqual(EVENT);
    const upper = Object.fromEntries(Object.entries(delivery(BODY)).map(([k, v]) => [k.toUpperCase(), v]));
    expect(verifyWebhook(BODY, upper, SECRET)).toEqual(EVENT);
  });

  it('accepts a delivery signed during a rotation by the old and the new secret', () => {
    const oldKey = randomBytes(32);
    const headers = delivery(BODY, { key: oldKey });
    const both = {
      ...headers,
      'webhook-signature': `${headers['webhook-signature']} ${delivery(BODY)['webhook-signature']}`,
    };
    expect(verifyWebhook(BODY, both, SECRET)).toEqual(EVENT);
  });

  it('refuses a body changed after signing', () => {
    const headers = delivery(BODY);
    expect(() => verifyWebhook(BODY.replace('webhook.test', 'run.completed'), headers, SECRET)).toThrow(
      WebhookVerificationError,
    );
  });

  it('refuses a signature by another secret, a missing signature and a stale timestamp', () => {
    expect(() => verifyWebhook(BODY, delivery(BODY, { key: randomBytes(32) }), SECRET)).toThrow(
      WebhookVerificationError,
    );
    const { 'webhook-signature': _, ...unsigned } = delivery(BODY);
    expect(() => verifyWebhook(BODY, unsigned, SECRET)).toThrow(/Missing required headers/);
    const stale = delivery(BODY, { timestamp: Math.floor(Date.now() / 1000) - 600 });
    expect(() => verifyWebhook(BODY, stale, SECRET)).toThrow(/too old/);
  });

  it('throws a TypeError for a secret that is not a webhook secret', () => {
    expect(() => verifyWebhook(BODY, delivery(BODY), 'whsec_')).toThrow(TypeError);
  });
});
