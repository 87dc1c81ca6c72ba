import { randomBytes } from 'node:crypto';
import type { Problem, RegisteredWebhook } from '@scenario-scoring/api-types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase } from '../../../test/support/test-databases.js';
import { testFeatures } from '../../../test/support/test-features.js';
import { startTestServer, type TestServer, testConfig } from '../../../test/support/test-server.js';
import { systemClock } from '../../common/clock.js';
import { newId } from '../../common/ids.js';
import { TenantKeyedHash } from '../../keys/tenant-keyed-hash.js';
import { registerWebhook } from '../api/webhook-service.js';
import type { ResolveHost } from './outbound-address-policy.js';
import { SecretBox } from './secret-box.js';

/** A production-like server: no allowlist, no development mode. */
const STRICT = { webhooks: { ...testConfig().webhooks, allowedCidrs: [], allowHttp: false } };

forEachDatabase('webhook refusals', ({ storage }) => {
  let strict: TestServer;
  let key: string;
  beforeAll(async () => {
    strict = await startTestServer({ storage: storage(), config: STRICT });
    ({ key } = await testFeatures(storage()).keys.create(`t-${randomBytes(6).toString('hex')}`));
  });
  afterAll(() => strict.close());

  const registerOn = async (server: TestServer, body: unknown) => {
    const response = await server.request('/v1/webhooks/register', { key, body });
    return { status: response.status, problem: (await response.json()) as Problem };
  };

  describe('registration', () => {
    it.each([
      ['a missing URL', { events: ['*'] }, '/body/url'],
      ['a URL that is not a URL', { url: 'not a url', events: ['*'] }, '/body/url'],
      ['a URL of another scheme', { url: 'ftp://example.com/x', events: ['*'] }, '/body/url'],
      ['an empty event list', { url: 'https://93.184.215.14/', events: [] }, '/body/events'],
      ['a malformed event type', { url: 'https://93.184.215.14/', events: ['RUN'] }, '/body/events/0'],
    ])('refuses %s with 400 validation_failed naming the field', async (_, body, path) => {
      const { status, problem } = await registerOn(strict, body);
      expect(status).toBe(400);
      expect(problem.code).toBe('validation_failed');
      expect(problem.errors?.map((e) => e.path)).toContain(path);
    });

    it('refuses "*" beside event types with 400 validation_failed saying why', async () => {
      const { status, problem } = await registerOn(strict, {
        url: 'https://93.184.215.14/',
        events: ['*', 'run.completed'],
      });
      expect(status).toBe(400);
      expect(problem).toMatchObject({ code: 'validation_failed', errors: [{ path: '/body/events' }] });
      expect(problem.detail).toContain('"*" already means every event type');
    });

    it('refuses unknown event types with 422 unknown_event_type naming each of them', async () => {
      const { status, problem } = await registerOn(strict, {
        url: 'https://93.184.215.14/',
        events: ['run.completed', 'run.finished', 'score.done'],
      });
      expect(status).toBe(422);
      expect(problem.code).toBe('unknown_event_type');
      expect(problem.detail).toBe(
        "'run.finished', 'score.done' are not event types; use run.completed, run.failed, policy.escalated, webhook.test, subject.erased, webhook.disabled, delivery.exhausted or '*'.",
      );
    });

    it('refuses http outside development mode with 422 webhook_url_refused', async () => {
      const { status, problem } = await registerOn(strict, {
        url: 'http://93.184.215.14/hook',
        events: ['*'],
      });
      expect(status).toBe(422);
      expect(problem.code).toBe('webhook_url_refused');
      expect(problem.detail).toContain('must use https');
    });

    it.each([
      ['https://127.0.0.1/', '127.0.0.1 is a loopback address (127.0.0.0/8)'],
      ['https://localhost/', 'localhost resolves to'],
      ['https://2130706433/', '127.0.0.1 is a loopback address'],
      ['https://0x7f.1/', '127.0.0.1 is a loopback address'],
      ['https://017700000001/', '127.0.0.1 is a loopback address'],
      ['https://good@127.0.0.1/', 'the URL holds credentials'],
      ['https://user:pw@hooks.example.com/', 'the URL holds credentials'],
      ['https://hooks.example.com:0/', 'port 0'],
      ['https://hooks.example.com/hook#part', 'fragment'],
      ['https://hooks.example.com/hook#', 'fragment'],
      ['https://[::1]/', '::1 is the loopback address'],
      ['https://[::ffff:127.0.0.1]/', 'IPv4-mapped address of 127.0.0.1'],
      ['https://169.254.169.254/latest/meta-data/', 'the cloud metadata address'],
      ['https://10.0.0.7/', '10.0.0.7 is a private address (10.0.0.0/8)'],
      ['https://100.64.1.1/', 'carrier-grade NAT'],
    ])('refuses %s with 422 webhook_url_refused saying which address and range', async (url, reason) => {
      const { status, problem } = await registerOn(strict, { url, events: ['*'] });
      expect(status, JSON.stringify(problem)).toBe(422);
      expect(problem.code).toBe('webhook_url_refused');
      expect(problem.detail).toContain(reason);
    });

    it('accepts a public https URL without resolving anything', async () => {
      const { status } = await registerOn(strict, { url: 'https://93.184.215.14/hook', events: ['*'] });
      expect(status).toBe(201);
    });

    it('refuses a URL with a bidirectional control (U+202E) with 422 webhook_url_refused', async () => {
      const { status, problem } = await registerOn(strict, {
        url: 'https://93.184.215.14/hooks/\u202Etxt.exe',
        events: ['*'],
      });
      expect(status).toBe(422);
      expect(problem.code).toBe('webhook_url_refused');
      expect(problem.detail).toContain('bidirectional control');
    });

    it.each([
      ['http://127.0.0.1:8080/v/x/../../admin', 'http://127.0.0.1:8080/admin'],
      ['http://127.0.0.2:8080\\@127.0.0.1:9/', 'http://127.0.0.2:8080/@127.0.0.1:9/'],
    ])('stores and shows %s as it is delivered to: %s', async (url, canonical) => {
      const loopback = await startTestServer({
        storage: storage(),
        config: { webhooks: { ...testConfig().webhooks, allowedCidrs: ['127.0.0.0/8'] } },
      });
      try {
        const response = await loopback.request('/v1/webhooks/register', {
          key,
          body: { url, events: ['*'] },
        });
        expect(response.status).toBe(201);
        const registered = (await response.json()) as RegisteredWebhook;
        expect(registered.url).toBe(canonical);
        const shown = await loopback.request(`/v1/webhooks/${registered.id}`, { key });
        expect(((await shown.json()) as RegisteredWebhook).url).toBe(canonical);
        const row = await storage()
          .db.selectFrom('webhooks')
          .select('url')
          .where('id', '=', registered.id)
          .executeTakeFirstOrThrow();
        expect(row.url).toBe(canonical);
        await loopback.request(`/v1/webhooks/${registered.id}`, { key, method: 'DELETE' });
      } finally {
        await loopback.close();
      }
    });

    it('refuses the backslash form when the host it is delivered to is not allowed', async () => {
      const allowlisted = await startTestServer({ storage: storage() });
      try {
        const { status, problem } = await registerOn(allowlisted, {
          url: 'http://127.0.0.2:8080\\@127.0.0.1:9/',
          events: ['*'],
        });
        expect(status).toBe(422);
        expect(problem.detail).toContain('127.0.0.2 is a loopback address');
      } finally {
        await allowlisted.close();
      }
    });

    it('accepts http to 127.0.0.1 when it is allowlisted (WEBHOOK_ALLOWED_CIDRS)', async () => {
      const allowlisted = await startTestServer({ storage: storage() });
      try {
        const { status } = await registerOn(allowlisted, {
          url: 'http://127.0.0.1:8080/hook',
          events: ['*'],
        });
        expect(status).toBe(201);
        const refused = await registerOn(allowlisted, { url: 'http://127.0.0.2:8080/hook', events: ['*'] });
        expect(refused.status).toBe(422);
      } finally {
        await allowlisted.close();
      }
    });
  });

  describe('registration under an Idempotency-Key', () => {
    it('replays a retried registration whose host no longer resolves, and refuses a reused key as reused', async () => {
      let addresses = ['93.184.215.14'];
      const resolve: ResolveHost = async (hostname) => {
        if (addresses.length === 0)
          throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
        return addresses.map((address) => ({ address, family: 4 }));
      };
      const deps = {
        storage: storage(),
        outbox: testFeatures(storage()).outbox,
        retired: testFeatures(storage()).retiredWebhooks,
        policy: STRICT.webhooks,
        secretBox: new SecretBox(randomBytes(32)),
        keyedHash: new TenantKeyedHash(randomBytes(32)),
        clock: systemClock,
        resolve,
      };
      const tenantId = `t-${randomBytes(6).toString('hex')}`;
      const caller = { tenantId, keyId: (await testFeatures(storage()).keys.create(tenantId)).keyId };
      const body = { url: 'https://hooks.example.com/x', events: ['*'] };
      const idempotencyKey = `retry-${randomBytes(4).toString('hex')}`;
      const first = await registerWebhook(deps, caller, { body, idempotencyKey });
      expect(first).toMatchObject({ replayed: false, value: { url: body.url, status: 'active' } });

      addresses = [];
      expect(await registerWebhook(deps, caller, { body, idempotencyKey })).toEqual({
        ...first,
        replayed: true,
      });
      const other = { url: 'https://gone.example.com/x', events: ['*'] };
      await expect(registerWebhook(deps, caller, { body: other, idempotencyKey })).rejects.toMatchObject({
        code: 'idempotency_key_reused',
      });
      await expect(
        registerWebhook(deps, caller, { body, idempotencyKey: `${idempotencyKey}-new` }),
      ).rejects.toMatchObject({ code: 'webhook_url_refused' });
    });
  });

  describe('changes', () => {
    let webhook: RegisteredWebhook;
    beforeAll(async () => {
      const response = await strict.request('/v1/webhooks/register', {
        key,
        body: { url: 'https://93.184.215.14/changes', events: ['run.completed'] },
      });
      webhook = (await response.json()) as RegisteredWebhook;
    });

    it('refuses a PATCH with an unknown event type (422) or no field at all (400)', async () => {
      const unknown = await strict.request(`/v1/webhooks/${webhook.id}`, {
        key,
        method: 'PATCH',
        body: { events: ['run.finished'] },
      });
      expect(unknown.status).toBe(422);
      expect(await unknown.json()).toMatchObject({ code: 'unknown_event_type' });
      const empty = await strict.request(`/v1/webhooks/${webhook.id}`, { key, method: 'PATCH', body: {} });
      expect(empty.status).toBe(400);
      expect(await empty.json()).toMatchObject({ code: 'validation_failed' });
    });

    it('refuses a grace period beyond 7 days with 400 validation_failed', async () => {
      const response = await strict.request(`/v1/webhooks/${webhook.id}/rotate-secret`, {
        key,
        body: { grace_period_seconds: 604_801 },
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({
        code: 'validation_failed',
        errors: [{ path: '/body/grace_period_seconds' }],
      });
    });

    it("answers another tenant's webhook id, and an unknown one, with 404 on every operation", async () => {
      const { key: otherKey } = await testFeatures(storage()).keys.create(
        `t-${randomBytes(6).toString('hex')}`,
      );
      for (const [caller, id] of [
        [otherKey, webhook.id],
        [key, newId('wh')],
      ] as const) {
        for (const [method, path, body] of [
          ['GET', `/v1/webhooks/${id}`, undefined],
          ['PATCH', `/v1/webhooks/${id}`, { description: 'mine now' }],
          ['DELETE', `/v1/webhooks/${id}`, undefined],
          ['POST', `/v1/webhooks/${id}/rotate-secret`, {}],
          ['POST', `/v1/webhooks/${id}/test`, undefined],
          ['GET', `/v1/webhooks/${id}/deliveries`, undefined],
        ] as const) {
          const response = await strict.request(path, { key: caller, method, body });
          expect(response.status, `${method} ${path}`).toBe(404);
          expect(await response.json()).toMatchObject({ code: 'not_found' });
        }
      }
      const still = await strict.request(`/v1/webhooks/${webhook.id}`, { key });
      expect(await still.json()).toMatchObject({ description: null, status: 'active' });
    });
  });
});
