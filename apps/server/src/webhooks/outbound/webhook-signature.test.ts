import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { describe, expect, it } from 'vitest';
import { generateWebhookSecret, webhookHeaders } from './webhook-signature.js';

const BODY =
  '{"id":"evt_01JZ4VFAJ2K4M6N8P0Q2R4S6T9","type":"webhook.test","timestamp":"2026-11-22T10:00:00.000Z","data":{}}';
const EVENT_ID = 'evt_01JZ4VFAJ2K4M6N8P0Q2R4S6T9';

describe('webhook signatures', () => {
  it('are verified by the standardwebhooks and svix libraries, unchanged', () => {
    const secret = generateWebhookSecret();
    const headers = webhookHeaders([secret], EVENT_ID, Math.floor(Date.now() / 1000), BODY);
    expect(new StandardWebhook(secret).verify(BODY, headers)).toMatchObject({ type: 'webhook.test' });
    const svixHeaders = {
      'svix-id': headers['webhook-id'],
      'svix-timestamp': headers['webhook-timestamp'],
      'svix-signature': headers['webhook-signature'],
    };
    // svix 2 returns nothing and throws when the signature does not verify.
    expect(() => new SvixWebhook(secret).verify(BODY, svixHeaders)).not.toThrow();
    expect(() => new SvixWebhook(secret).verify(BODY, headers)).not.toThrow();
  });

  it('fail to verify with a wrong secret or a body changed by one byte', () => {
    const secret = generateWebhookSecret();
    const headers = webhookHeaders([secret], EVENT_ID, Math.floor(Date.now() / 1000), BODY);
    expect(() => new StandardWebhook(generateWebhookSecret()).verify(BODY, headers)).toThrow();
    expect(() => new StandardWebhook(secret).verify(BODY.replace('test', 'tesT'), headers)).toThrow();
    expect(() => new SvixWebhook(generateWebhookSecret()).verify(BODY, headers)).toThrow();
    expect(() => new SvixWebhook(secret).verify(`${BODY} `, headers)).toThrow();
  });

  it('carry one signature per secret during a rotation, each verifying on its own', () => {
    const [current, previous] = [generateWebhookSecret(), generateWebhookSecret()];
    const headers = webhookHeaders([current, previous], EVENT_ID, Math.floor(Date.now() / 1000), BODY);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(new StandardWebhook(current).verify(BODY, headers)).toBeTruthy();
    expect(new StandardWebhook(previous).verify(BODY, headers)).toBeTruthy();
  });

  it('sign again with the key made once per secret: later messages and other secrets verify as the first', () => {
    const secrets = [generateWebhookSecret(), generateWebhookSecret()];
    for (let n = 0; n < 3; n++) {
      for (const secret of secrets) {
        const body = BODY.replace('{}', `{"n":${n}}`);
        const headers = webhookHeaders([secret], EVENT_ID, Math.floor(Date.now() / 1000), body);
        expect(new StandardWebhook(secret).verify(body, headers)).toMatchObject({ data: { n } });
        expect(() =>
          new StandardWebhook(secrets.find((s) => s !== secret) as string).verify(body, headers),
        ).toThrow();
      }
    }
    expect(() => webhookHeaders(['not_a_secret'], EVENT_ID, 0, BODY)).toThrow(/whsec_/);
  });

  it('makes secrets of whsec_ and the base64 of 32 bytes', () => {
    const secret = generateWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
  });
});
