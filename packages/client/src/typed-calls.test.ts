import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  API_KEY,
  BASE_URL,
  jsonResponse,
  problemResponse,
  SCORE_RESPONSE,
  scriptedFetch,
} from '../test/scripted-fetch.js';
import type { Problem, ScoreResponse } from './api-types.js';
import { createClient } from './client-factory.js';
import { registerWebhook, replayWebhookEvents, scoreSubject } from './typed-calls.js';

const WEBHOOK = {
  id: 'wh_01JZ4V8Q6Y3M2N5P7R9S1T3V5X',
  url: 'https://receiver.test/hooks',
  events: ['run.completed'],
  description: null,
  status: 'active',
  disabled_reason: null,
  created_at: '2026-11-24T00:00:00Z',
  updated_at: '2026-11-24T00:00:00Z',
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw6VGNO8XrBJI=',
};

describe('typed calls', () => {
  it('scoreSubject posts the body and answers data, or the problem', async () => {
    const { fetch, sent } = scriptedFetch(
      jsonResponse(SCORE_RESPONSE),
      problemResponse(400, 'validation_failed'),
    );
    const client = createClient({ baseUrl: BASE_URL, apiKey: API_KEY, fetch, retries: false });
    const body = { subject: 'applicant-42', context: { jurisdiction: 'DE', utilization: 0.35 } };

    const ok = await scoreSubject(client, body);
    expectTypeOf(ok.data).toEqualTypeOf<ScoreResponse | undefined>();
    expect(ok.data?.status).toBe('ok');
    expect(sent[0]).toMatchObject({ method: 'POST', url: `${BASE_URL}/v1/scoring/score` });
    expect(JSON.parse(sent[0]?.body ?? '')).toEqual(body);

    const refused = await scoreSubject(client, body);
    expectTypeOf(refused.error).toEqualTypeOf<Problem | undefined>();
    expect(refused.error?.code).toBe('validation_failed');
  });

  it('a typo inside the nested context is a compile error through the helper (not through client.POST)', async () => {
    const { fetch } = scriptedFetch(jsonResponse(SCORE_RESPONSE), jsonResponse(SCORE_RESPONSE));
    const client = createClient({ baseUrl: BASE_URL, apiKey: API_KEY, fetch, retries: false });
    // @ts-expect-error `utilisation` is not a context key: `utilization` is
    await scoreSubject(client, { subject: 'a', context: { jurisdiction: 'DE', utilisation: 0.3 } });
    // The generic client call does not see it: the documented pattern there is `satisfies ScoreRequest`.
    await client.POST('/v1/scoring/score', {
      body: { subject: 'a', context: { jurisdiction: 'DE', utilisation: 0.3 } },
    });
  });

  it('replayWebhookEvents sends the range as RFC 3339 with the Idempotency-Key, and answers the counts', async () => {
    const queued = {
      webhook_id: WEBHOOK.id,
      since: '2026-11-22T08:00:00.000Z',
      until: '2026-11-22T12:00:00.000Z',
      events: 3,
      queued: 2,
    };
    const { fetch, sent } = scriptedFetch(
      jsonResponse(queued, 202),
      problemResponse(400, 'validation_failed'),
    );
    const client = createClient({ baseUrl: BASE_URL, apiKey: API_KEY, fetch, retries: false });
    const range = { since: new Date('2026-11-22T08:00:00Z'), until: '2026-11-22T12:00:00Z' };
    const ok = await replayWebhookEvents(client, WEBHOOK.id, range, { idempotencyKey: 'replay-1' });
    expect(ok.data).toEqual(queued);
    expect(sent[0]).toMatchObject({ method: 'POST', url: `${BASE_URL}/v1/webhooks/${WEBHOOK.id}/replay` });
    expect(sent[0]?.headers.get('idempotency-key')).toBe('replay-1');
    expect(JSON.parse(sent[0]?.body ?? '')).toEqual({
      since: '2026-11-22T08:00:00.000Z',
      until: '2026-11-22T12:00:00Z',
    });
    const refused = await replayWebhookEvents(client, WEBHOOK.id, range);
    expect(refused.error?.code).toBe('validation_failed');
  });

  it('registerWebhook types the event names and sends the Idempotency-Key', async () => {
    const { fetch, sent } = scriptedFetch(jsonResponse(WEBHOOK, 201), jsonResponse(WEBHOOK, 201));
    const client = createClient({ baseUrl: BASE_URL, apiKey: API_KEY, fetch, retries: false });
    const registered = await registerWebhook(
      client,
      { url: 'https://receiver.test/hooks', events: ['run.completed', 'run.failed'] },
      { idempotencyKey: 'register-receiver-1' },
    );
    expect(registered.data?.secret).toMatch(/^whsec_/);
    expect(sent[0]?.headers.get('idempotency-key')).toBe('register-receiver-1');
    expect(JSON.parse(sent[0]?.body ?? '')).toEqual({
      url: 'https://receiver.test/hooks',
      events: ['run.completed', 'run.failed'],
    });
    await registerWebhook(client, { url: 'https://receiver.test/hooks', events: ['*'] });
    // @ts-expect-error there is no `run.complete` event
    void (() => registerWebhook(client, { url: 'https://r.test/', events: ['run.complete'] }));
    // @ts-expect-error `*` stands alone
    void (() => registerWebhook(client, { url: 'https://r.test/', events: ['*', 'run.failed'] }));
    // @ts-expect-error at least one event
    void (() => registerWebhook(client, { url: 'https://r.test/', events: [] }));
  });
});
