import { createHmac, randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
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

  /** The reason a delivery is refused for, or undefined when it verifies. */
  function refusal(body: string, headers: Record<string, string>): unknown {
    try {
      verifyWebhook(body, headers, SECRET);
      return undefined;
    } catch (error) {
      expect(error).toBeInstanceOf(WebhookVerificationError);
      return (error as WebhookVerificationError).reason;
    }
  }

  it('refuses a body changed after signing: invalid_signature', () => {
    const headers = delivery(BODY);
    expect(refusal(BODY.replace('webhook.test', 'run.completed'), headers)).toBe('invalid_signature');
  });

  it('refuses a signature by another secret, or a signature of another version: invalid_signature', () => {
    expect(refusal(BODY, delivery(BODY, { key: randomBytes(32) }))).toBe('invalid_signature');
    const v2 = {
      ...delivery(BODY),
      'webhook-signature': delivery(BODY)['webhook-signature'].replace('v1,', 'v2,'),
    };
    expect(refusal(BODY, v2)).toBe('invalid_signature');
  });

  it('refuses a delivery without one of its headers: missing_headers, naming it', () => {
    const { 'webhook-signature': _, ...unsigned } = delivery(BODY);
    expect(refusal(BODY, unsigned)).toBe('missing_headers');
    expect(() => verifyWebhook(BODY, unsigned, SECRET)).toThrow(
      /Missing required headers: webhook-signature/,
    );
    const { 'webhook-id': __, ...anonymous } = delivery(BODY);
    expect(refusal(BODY, anonymous)).toBe('missing_headers');
    expect(refusal(BODY, {})).toBe('missing_headers');
  });

  it('refuses a timestamp more than 5 minutes old or ahead: stale_timestamp; a non-number: invalid_headers', () => {
    const now = Math.floor(Date.now() / 1000);
    expect(refusal(BODY, delivery(BODY, { timestamp: now - 600 }))).toBe('stale_timestamp');
    expect(refusal(BODY, delivery(BODY, { timestamp: now + 600 }))).toBe('stale_timestamp');
    expect(refusal(BODY, delivery(BODY, { timestamp: now - 240 }))).toBeUndefined();
    expect(refusal(BODY, { ...delivery(BODY), 'webhook-timestamp': 'yesterday' })).toBe('invalid_headers');
  });

  it('refuses an authentic body that is not a JSON event: malformed_body', () => {
    for (const body of [
      'not json',
      '[]',
      '{"id":"evt_1","type":"webhook.test"}',
      '{"id":1,"type":"x","timestamp":"t","data":{}}',
    ]) {
      expect(refusal(body, delivery(body)), body).toBe('malformed_body');
    }
  });

  it('verifies deliveries signed by the standardwebhooks library itself', () => {
    const id = 'evt_01JZ4V8Q6Y3M2N5P7R9S1T3V5X';
    const timestamp = new Date();
    const signature = new Webhook(SECRET).sign(id, timestamp, BODY);
    const headers = {
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
      'webhook-signature': signature,
    };
    expect(verifyWebhook(BODY, headers, SECRET)).toEqual(EVENT);
  });

  it('throws a TypeError for a secret that is not a webhook secret', () => {
    expect(() => verifyWebhook(BODY, delivery(BODY), 'whsec_')).toThrow(TypeError);
  });
});
