import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RegisterWebhookRequest, ScoringClient } from '@scenario-scoring/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectAnswer, expectProblem } from './harness/contract-calls.js';
import { clientOf, rawBody } from './harness/contract-client.js';
import type { ContractOperation } from './harness/contract-validator.js';
import { type DocumentedAnswer, preferHeader } from './harness/documented-answer.js';
import { startTarget, type Target } from './harness/targets.js';

const OPERATIONS = {
  register: { path: '/v1/webhooks/register', method: 'post' },
  list: { path: '/v1/webhooks', method: 'get' },
  get: { path: '/v1/webhooks/{id}', method: 'get' },
  update: { path: '/v1/webhooks/{id}', method: 'patch' },
  remove: { path: '/v1/webhooks/{id}', method: 'delete' },
  rotate: { path: '/v1/webhooks/{id}/rotate-secret', method: 'post' },
  test: { path: '/v1/webhooks/{id}/test', method: 'post' },
  deliveries: { path: '/v1/webhooks/{id}/deliveries', method: 'get' },
  attempts: { path: '/v1/webhooks/{id}/deliveries/{delivery_id}/attempts', method: 'get' },
  redeliver: { path: '/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver', method: 'post' },
} as const satisfies Record<string, ContractOperation>;

let target: Target;
let client: ScoringClient;
/** A receiver on this machine (allowlisted on the server target), answering 204 to whatever arrives. */
let receiver: Server;
let receiverUrl: string;
beforeAll(async () => {
  receiver = createServer((_req, res) => res.writeHead(204).end());
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  target = await startTarget();
  client = clientOf(target);
});
afterAll(async () => {
  await target?.stop();
  await new Promise<void>((resolve) => receiver?.close(() => resolve()));
});

/** Registers a webhook to the receiver, as the contract's `Registered` answer. */
async function register(body: Partial<RegisterWebhookRequest> = {}, headers: Record<string, string> = {}) {
  const result = await client.POST('/v1/webhooks/register', {
    body: { url: receiverUrl, events: ['run.completed', 'run.failed'], ...body },
    headers: { ...preferHeader({ status: 201, example: 'Registered' }), ...headers },
  });
  return expectAnswer(OPERATIONS.register, result, { status: 201 });
}

const path = (id: string) => ({ params: { path: { id } } });
const withAnswer = (answer: DocumentedAnswer) => ({ headers: preferHeader(answer) });

describe('a webhook', () => {
  it('is registered with its secret, shown once, and a Location; reads never show the secret', async () => {
    const { data, response } = await register({ description: 'contract suite' });
    expect(data?.secret).toMatch(/^whsec_/);
    const id = data?.id ?? '';
    // The mock too: its Location names the webhook, and a first call is no replay.
    expect(response.headers.get('Location')).toBe(`/v1/webhooks/${id}`);
    expect(response.headers.get('Idempotent-Replayed')).toBeNull();
    if (target.kind === 'server') {
      expect(data).toMatchObject({ url: receiverUrl, description: 'contract suite' });
    }

    const read = await client.GET('/v1/webhooks/{id}', {
      ...path(id),
      ...withAnswer({ status: 200, example: 'Active' }),
    });
    expectAnswer(OPERATIONS.get, read, { status: 200 });
    expect(JSON.stringify(read.data)).not.toContain('whsec_');
    const listed = await client.GET('/v1/webhooks', {
      params: { query: { limit: 10 } },
      ...withAnswer({ status: 200, example: 'OnePage' }),
    });
    expectAnswer(OPERATIONS.list, listed, { status: 200 });
    expect(JSON.stringify(listed.data)).not.toContain('whsec_');
    if (target.kind === 'server') expect(listed.data?.data.map((w) => w.id)).toContain(id);
  });

  it('replays a registration sent again with the same Idempotency-Key', async () => {
    const headers = { 'Idempotency-Key': randomUUID() };
    const first = await register({}, headers);
    const again = await register({}, headers);
    if (target.kind === 'server') {
      expect(again.data).toEqual(first.data);
      expect(again.response.headers.get('Idempotent-Replayed')).toBe('true');
    }
  });

  it('is changed, disabled and re-enabled with PATCH', async () => {
    const { data } = await register();
    const id = data?.id ?? '';
    const changed = await client.PATCH('/v1/webhooks/{id}', {
      ...path(id),
      body: { events: ['*'], description: 'everything' },
      ...withAnswer({ status: 200, example: 'Active' }),
    });
    expectAnswer(OPERATIONS.update, changed, { status: 200 });
    const disabled = await client.PATCH('/v1/webhooks/{id}', {
      ...path(id),
      body: { status: 'disabled' },
      ...withAnswer({ status: 200, example: 'Active' }),
    });
    expectAnswer(OPERATIONS.update, disabled, { status: 200 });
    const enabled = await client.PATCH('/v1/webhooks/{id}', {
      ...path(id),
      body: { status: 'active' },
      ...withAnswer({ status: 200, example: 'Active' }),
    });
    expectAnswer(OPERATIONS.update, enabled, { status: 200 });
    if (target.kind === 'server') {
      expect(changed.data).toMatchObject({ events: ['*'], description: 'everything' });
      expect(disabled.data).toMatchObject({ status: 'disabled', disabled_reason: 'manual' });
      expect(enabled.data).toMatchObject({ status: 'active', disabled_reason: null });
    }
  });

  it('gets a new secret on rotation, with the time the previous one stops signing', async () => {
    const { data } = await register();
    const rotated = await client.POST('/v1/webhooks/{id}/rotate-secret', {
      ...path(data?.id ?? ''),
      body: { grace_period_seconds: 3600 },
      ...withAnswer({ status: 200, example: 'Rotated' }),
    });
    expectAnswer(OPERATIONS.rotate, rotated, { status: 200 });
    if (target.kind === 'server') expect(rotated.data?.secret).not.toBe(data?.secret);
  });

  it('is deleted with 204, and is then not found', async () => {
    const { data } = await register();
    const id = data?.id ?? '';
    const removed = await client.DELETE('/v1/webhooks/{id}', { ...path(id), ...withAnswer({ status: 204 }) });
    expectAnswer(OPERATIONS.remove, removed, { status: 204 });
    const gone = await client.GET('/v1/webhooks/{id}', {
      ...path(id),
      ...withAnswer({ status: 404, example: 'NotFound' }),
    });
    expectAnswer(OPERATIONS.get, gone, { status: 404 });
    expectProblem(target, gone.error, { code: 'not_found', instance: `/v1/webhooks/${id}` });
  });
});

describe('deliveries', () => {
  it('are queued by a test event, listed with their attempts, and redelivered', async () => {
    const { data: webhook } = await register();
    const id = webhook?.id ?? '';
    const sent = await client.POST('/v1/webhooks/{id}/test', {
      ...path(id),
      ...withAnswer({ status: 202, example: 'Queued' }),
    });
    expectAnswer(OPERATIONS.test, sent, { status: 202 });
    const deliveryId = sent.data?.id ?? '';
    if (target.kind === 'server')
      expect(sent.data).toMatchObject({ event_type: 'webhook.test', status: 'pending' });

    const listed = await client.GET('/v1/webhooks/{id}/deliveries', {
      ...path(id),
      ...withAnswer({ status: 200, example: 'OnePage' }),
    });
    expectAnswer(OPERATIONS.deliveries, listed, { status: 200 });
    if (target.kind === 'server') expect(listed.data?.data.map((d) => d.id)).toEqual([deliveryId]);

    const ids = { params: { path: { id, delivery_id: deliveryId } } };
    const attempts = await client.GET('/v1/webhooks/{id}/deliveries/{delivery_id}/attempts', {
      ...ids,
      ...withAnswer({ status: 200, example: 'Retried' }),
    });
    expectAnswer(OPERATIONS.attempts, attempts, { status: 200 });

    const again = await client.POST('/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver', {
      ...ids,
      ...withAnswer({ status: 202, example: 'Queued' }),
    });
    expectAnswer(OPERATIONS.redeliver, again, { status: 202 });
    if (target.kind === 'server')
      expect(again.data).toMatchObject({ id: deliveryId, event_id: sent.data?.event_id });
  });

  it('of an unknown delivery answer 404 not_found', async () => {
    const { data: webhook } = await register();
    const ids = {
      params: { path: { id: webhook?.id ?? '', delivery_id: 'dlv_01JZ4VG9H1J3K5M7N9P1Q3R5S7' } },
    };
    const result = await client.POST('/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver', {
      ...ids,
      ...withAnswer({ status: 404, example: 'NotFound' }),
    });
    expectAnswer(OPERATIONS.redeliver, result, { status: 404 });
    expectProblem(target, result.error, { code: 'not_found' });
  });
});

describe('refusals', () => {
  it("answers another tenant's webhook with 404 not_found, as if it did not exist", async () => {
    const { data } = await register();
    const other = clientOf(target, { apiKey: target.otherTenantKey });
    const id = data?.id ?? '';
    const read = await other.GET('/v1/webhooks/{id}', {
      ...path(id),
      ...withAnswer({ status: 404, example: 'NotFound' }),
    });
    expectAnswer(OPERATIONS.get, read, { status: 404 });
    expectProblem(target, read.error, { code: 'not_found', instance: `/v1/webhooks/${id}` });
    const removed = await other.DELETE('/v1/webhooks/{id}', {
      ...path(id),
      ...withAnswer({ status: 404, example: 'NotFound' }),
    });
    expectAnswer(OPERATIONS.remove, removed, { status: 404 });
  });

  it('refuses an unknown event type with 422 unknown_event_type', async () => {
    const result = await client.POST('/v1/webhooks/register', {
      body: { url: receiverUrl, events: ['run.finished'] },
      ...withAnswer({ status: 422, example: 'UnknownEventType' }),
    });
    expectAnswer(OPERATIONS.register, result, { status: 422 });
    expectProblem(target, result.error, {
      code: 'unknown_event_type',
      detail: "'run.finished' is not an event type",
    });
  });

  it('refuses a URL that resolves to a private address with 422 webhook_url_refused', async () => {
    const result = await client.POST('/v1/webhooks/register', {
      body: { url: 'https://10.0.0.7/hooks', events: ['*'] },
      ...withAnswer({ status: 422, example: 'WebhookUrlRefused' }),
    });
    expectAnswer(OPERATIONS.register, result, { status: 422 });
    expectProblem(target, result.error, {
      code: 'webhook_url_refused',
      detail: '10.0.0.7 is a private address',
    });
  });

  // The mock answers an invalid request like the server (Prism alone would answer the 422 example).
  it('refuses an ftp:// URL with 400 validation_failed naming /body/url, not a 422', async () => {
    const result = await client.POST('/v1/webhooks/register', {
      body: { url: 'ftp://receiver.test/hooks', events: ['*'] },
      headers: { 'Idempotency-Key': randomUUID() },
    });
    expectAnswer(OPERATIONS.register, result, { status: 400 });
    expectProblem(target, result.error, { code: 'validation_failed', paths: ['/body/url'] });
  });

  it('refuses a registration without a URL with 400 validation_failed naming /body/url', async () => {
    const result = await client.POST('/v1/webhooks/register', {
      ...rawBody(JSON.stringify({ events: ['*'] })),
      ...withAnswer({ status: 400, example: 'ValidationFailed' }),
    });
    expectAnswer(OPERATIONS.register, result, { status: 400 });
    expectProblem(target, result.error, { code: 'validation_failed', paths: ['/body/url'] });
  });
});
