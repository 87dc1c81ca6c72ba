import { randomBytes } from 'node:crypto';
import { waitUntil } from '@scenario-scoring/testkit';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { expect, it } from 'vitest';
import { forEachDatabase } from '../../../test/support/test-databases.js';
import {
  attemptsOf,
  commitTestEvents,
  createTestWebhook,
  FakeClock,
  rotateTestSecret,
  settledDelivery,
  useDeliveryFixtures,
} from '../../../test/support/test-webhooks.js';
import { SecretBox } from '../outbound/secret-box.js';
import { generateWebhookSecret } from '../outbound/webhook-signature.js';

const secretBox = new SecretBox(randomBytes(32));
let tenants = 0;
const nextTenant = () => `deliver-${++tenants}`;

forEachDatabase('the delivery worker', ({ storage }) => {
  const { worker, receiver } = useDeliveryFixtures(storage, secretBox);

  it('delivers the stored payload, signed so that standardwebhooks and svix verify it unchanged', async () => {
    const tenant = nextTenant();
    const hook = await receiver();
    const { secret } = await createTestWebhook(storage(), secretBox, { tenantId: tenant, url: hook.url });
    worker();
    const [eventId] = await commitTestEvents(storage(), tenant);
    expect(await settledDelivery(storage(), eventId as string)).toMatchObject({
      status: 'succeeded',
      attempt_count: 1,
    });

    const [request] = hook.requests;
    const stored = await storage()
      .db.selectFrom('events')
      .select('payload')
      .where('id', '=', eventId as string)
      .executeTakeFirstOrThrow();
    expect(request?.body).toBe(stored.payload);
    const headers = request?.headers as Record<string, string>;
    expect(headers).toMatchObject({
      'content-type': 'application/json',
      'user-agent': 'scenario-scoring-webhooks/0.1.0',
      'webhook-id': eventId,
    });
    expect(Math.abs(Number(headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
    const body = request?.body as string;
    expect(new StandardWebhook(secret).verify(body, headers)).toMatchObject({
      id: eventId,
      type: 'webhook.test',
    });
    expect(() => new SvixWebhook(secret).verify(body, headers)).not.toThrow();

    expect(() => new StandardWebhook(generateWebhookSecret()).verify(body, headers)).toThrow();
    expect(() => new SvixWebhook(generateWebhookSecret()).verify(body, headers)).toThrow();
    const oneByteChanged = body.replace('"webhook.test"', '"webhook.tesT"');
    expect(() => new StandardWebhook(secret).verify(oneByteChanged, headers)).toThrow();
    expect(() => new SvixWebhook(secret).verify(oneByteChanged, headers)).toThrow();
  });

  it('when the receiver answers 500 twice then 200, makes three attempts with the same webhook-id and records each', async () => {
    const tenant = nextTenant();
    const hook = await receiver((_request, index, res) => {
      res.statusCode = index < 2 ? 500 : 200;
      res.end(index < 2 ? 'busy' : 'thanks');
    });
    await createTestWebhook(storage(), secretBox, { tenantId: tenant, url: hook.url });
    worker();
    const [eventId] = (await commitTestEvents(storage(), tenant)) as [string];
    const delivery = await settledDelivery(storage(), eventId);
    expect(delivery).toMatchObject({ status: 'succeeded', attempt_count: 3, failed_scheduled_attempts: 2 });
    expect(hook.requests.map((r) => r.headers['webhook-id'])).toEqual([eventId, eventId, eventId]);
    const attempts = await attemptsOf(storage(), delivery.id);
    expect(attempts.map((a) => [a.status_code, a.error, a.response_body, a.trigger])).toEqual([
      [500, 'HTTP 500', 'busy', 'scheduled'],
      [500, 'HTTP 500', 'busy', 'scheduled'],
      [200, null, 'thanks', 'scheduled'],
    ]);
    expect(attempts.every((a) => a.duration_ms >= 0)).toBe(true);
  });

  it('after the last scheduled retry, leaves the delivery failed with no next attempt', async () => {
    const tenant = nextTenant();
    const hook = await receiver((_r, _i, res) => {
      res.statusCode = 503;
      res.end();
    });
    await createTestWebhook(storage(), secretBox, { tenantId: tenant, url: hook.url });
    worker({ config: { retryScheduleMs: [10, 10] } });
    const [eventId] = (await commitTestEvents(storage(), tenant)) as [string];
    expect(await settledDelivery(storage(), eventId)).toMatchObject({
      status: 'failed',
      attempt_count: 3,
      next_attempt_at: null,
    });
  });

  it('signs with both secrets during a rotation grace period, and only with the new one after it', async () => {
    const tenant = nextTenant();
    const clock = new FakeClock();
    const hook = await receiver();
    const { id, secret: oldSecret } = await createTestWebhook(storage(), secretBox, {
      tenantId: tenant,
      url: hook.url,
    });
    const newSecret = await rotateTestSecret(storage(), secretBox, id, { now: clock.now(), graceMs: 60_000 });
    worker({ clock });

    const [during] = (await commitTestEvents(storage(), tenant, { now: clock.now() })) as [string];
    await settledDelivery(storage(), during);
    const first = hook.requests[0] as { body: string; headers: Record<string, string> };
    expect(first.headers['webhook-signature']?.split(' ')).toHaveLength(2);
    expect(new StandardWebhook(oldSecret).verify(first.body, first.headers)).toBeTruthy();
    expect(new StandardWebhook(newSecret).verify(first.body, first.headers)).toBeTruthy();

    clock.advance(61_000); // past the grace period, within the receivers' 5-minute timestamp tolerance
    const [after] = (await commitTestEvents(storage(), tenant, { now: clock.now() })) as [string];
    await settledDelivery(storage(), after);
    const second = hook.requests[1] as { body: string; headers: Record<string, string> };
    expect(second.headers['webhook-signature']?.split(' ')).toHaveLength(1);
    expect(new StandardWebhook(newSecret).verify(second.body, second.headers)).toBeTruthy();
    expect(() => new StandardWebhook(oldSecret).verify(second.body, second.headers)).toThrow();
  });

  it('honours Retry-After, and waits at least the throttled minimum after a 429', async () => {
    const tenant = nextTenant();
    const hook = await receiver((_r, index, res) => {
      res.statusCode = index === 0 ? 429 : 503;
      if (index === 1) res.setHeader('retry-after', '600');
      res.end();
    });
    await createTestWebhook(storage(), secretBox, { tenantId: tenant, url: hook.url });
    const clock = new FakeClock();
    worker({ clock, config: { throttledMinDelayMs: 60_000, retryScheduleMs: [10, 10] } });
    const [eventId] = (await commitTestEvents(storage(), tenant, { now: clock.now() })) as [string];
    const gap = (d: { next_attempt_at: string | null; last_attempt_at: string | null }) =>
      Date.parse(d.next_attempt_at as string) - Date.parse(d.last_attempt_at as string);

    const throttled = await settledDelivery(storage(), eventId, (d) => d.attempt_count === 1);
    expect(gap(throttled)).toBeGreaterThanOrEqual(60_000);
    expect(gap(throttled)).toBeLessThan(61_000);
    clock.advance(61_000);
    const retryAfter = await settledDelivery(storage(), eventId, (d) => d.attempt_count === 2);
    expect(gap(retryAfter)).toBeGreaterThanOrEqual(600_000);
    expect(gap(retryAfter)).toBeLessThan(601_000);
  });

  it('does not follow a redirect: the attempt fails with error redirect', async () => {
    const tenant = nextTenant();
    const hook = await receiver((_request, _i, res) => {
      res.statusCode = 307;
      res.setHeader('location', '/elsewhere');
      res.end();
    });
    await createTestWebhook(storage(), secretBox, { tenantId: tenant, url: hook.url });
    worker({ config: { retryScheduleMs: [] } });
    const [eventId] = (await commitTestEvents(storage(), tenant)) as [string];
    const delivery = await settledDelivery(storage(), eventId);
    expect(delivery.status).toBe('failed');
    // One request for the event, none to the redirect's target; the `delivery.exhausted` its failure
    // raises may reach the same receiver too (it is subscribed to every type), so it is not counted.
    expect(hook.requests.filter((r) => r.headers['webhook-id'] === eventId)).toHaveLength(1);
    expect(await attemptsOf(storage(), delivery.id)).toMatchObject([{ status_code: 307, error: 'redirect' }]);
  });

  it('records a receiver that does not answer in time as status 0 timeout, retried no sooner than the throttled minimum', async () => {
    const tenant = nextTenant();
    const hook = await receiver(() => {}); // never answers
    await createTestWebhook(storage(), secretBox, { tenantId: tenant, url: hook.url });
    worker({ config: { timeoutMs: 200, leaseMs: 5_000, throttledMinDelayMs: 60_000 } });
    const [eventId] = (await commitTestEvents(storage(), tenant)) as [string];
    const delivery = await settledDelivery(storage(), eventId, (d) => d.attempt_count === 1);
    expect(delivery.status).toBe('pending');
    expect(
      Date.parse(delivery.next_attempt_at as string) - Date.parse(delivery.last_attempt_at as string),
    ).toBeGreaterThanOrEqual(60_000);
    const [attempt] = await attemptsOf(storage(), delivery.id);
    expect(attempt).toMatchObject({ status_code: 0, error: 'timeout', response_body: null });
    expect(attempt?.duration_ms).toBeGreaterThanOrEqual(150);
  });

  it('keeps the first 1 KiB of the response body, and says it was cut', async () => {
    const tenant = nextTenant();
    const hook = await receiver((_r, _i, res) => res.end(`é${'x'.repeat(20_000)}`));
    await createTestWebhook(storage(), secretBox, { tenantId: tenant, url: hook.url });
    worker();
    const [eventId] = (await commitTestEvents(storage(), tenant)) as [string];
    const delivery = await settledDelivery(storage(), eventId);
    const [attempt] = await attemptsOf(storage(), delivery.id);
    expect(attempt?.response_body).toBe(`é${'x'.repeat(1022)}`);
    expect(attempt?.response_body_truncated).toBe(1);
  });

  it('keeps a body of exactly 1 KiB whole, not flagged as cut', async () => {
    const tenant = nextTenant();
    const hook = await receiver((_r, _i, res) => res.end('y'.repeat(1024)));
    await createTestWebhook(storage(), secretBox, { tenantId: tenant, url: hook.url });
    worker();
    const [eventId] = (await commitTestEvents(storage(), tenant)) as [string];
    const delivery = await settledDelivery(storage(), eventId);
    const [attempt] = await attemptsOf(storage(), delivery.id);
    expect(attempt?.response_body).toBe('y'.repeat(1024));
    expect(attempt?.response_body_truncated).toBe(0);
  });

  it("keeps as many claimed deliveries queued as a tenant's share of slots, behind its attempts in flight, and no more", async () => {
    const tenant = nextTenant();
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const hook = await receiver(async (_r, _i, res) => {
      await held;
      res.end('ok');
    });
    await createTestWebhook(storage(), secretBox, { tenantId: tenant, url: hook.url });
    // A share of 2 (at most half the slots for one tenant), and as many queued.
    const running = worker({
      config: { concurrency: 4, tenantConcurrency: 2, timeoutMs: 10_000, leaseMs: 60_000 },
    });
    const eventIds = await commitTestEvents(storage(), tenant, { count: 10 });
    const leased = async () => {
      const row = await storage()
        .db.selectFrom('deliveries')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('tenant_id', '=', tenant)
        .where('locked_by', '=', running.workerId)
        .executeTakeFirstOrThrow();
      return Number(row.n);
    };
    await waitUntil(() => hook.requests.length === 2, 10_000, 'two requests in flight');
    // Two in flight, two queued: the next claims come as soon as the first attempts end.
    await waitUntil(async () => (await leased()) === 4, 10_000, 'four deliveries leased');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await leased()).toBe(4);
    expect(hook.requests).toHaveLength(2);
    release();
    for (const eventId of eventIds) {
      expect(await settledDelivery(storage(), eventId)).toMatchObject({ status: 'succeeded' });
    }
  });

  it('when stopped with attempts in flight, lets them finish and records them', async () => {
    const tenant = nextTenant();
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const hook = await receiver(async (_r, _i, res) => {
      await held;
      res.end('late');
    });
    await createTestWebhook(storage(), secretBox, { tenantId: tenant, url: hook.url });
    const running = worker();
    const eventIds = await commitTestEvents(storage(), tenant, { count: 5 });
    await waitUntil(() => hook.requests.length === 5, 10_000, 'five requests in flight');
    const stopped = running.stop();
    setTimeout(release, 100);
    await stopped;
    for (const eventId of eventIds) {
      expect(await settledDelivery(storage(), eventId)).toMatchObject({
        status: 'succeeded',
        locked_by: null,
      });
    }
  });
});
