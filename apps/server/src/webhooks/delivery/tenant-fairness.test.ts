import { randomBytes } from 'node:crypto';
import { waitUntil } from '@scenario-scoring/testkit';
import { expect, it } from 'vitest';
import { forEachDatabase } from '../../../test/support/test-databases.js';
import {
  commitTestEvents,
  createTestWebhook,
  type TestReceiver,
  useDeliveryFixtures,
} from '../../../test/support/test-webhooks.js';
import { SecretBox } from '../outbound/secret-box.js';

const secretBox = new SecretBox(randomBytes(32));
let tenants = 0;
const nextTenant = (role: string) => `fair-${role}-${++tenants}-${randomBytes(3).toString('hex')}`;

/** Compressed: slow receivers hang past this; the fast tenant's latency must stay far below it. */
const TIMEOUT_MS = 3_000;
const SLOW_TENANTS = 3;
const SLOW_WEBHOOKS = 10;
const SLOW_EVENTS = 10;

const percentile = (values: readonly number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
};

forEachDatabase('delivery slots shared among tenants', ({ storage }) => {
  const { worker, receiver } = useDeliveryFixtures(storage, secretBox);

  it("keeps a fast tenant's deliveries prompt while three tenants' receivers hang", async () => {
    const arrived = new Map<string, number>();
    const fast = await receiver((request, _i, res) => {
      arrived.set(String(request.headers['webhook-id']), performance.now());
      res.end('ok');
    });
    const fastTenant = nextTenant('fast');
    await createTestWebhook(storage(), secretBox, { tenantId: fastTenant, url: fast.url });
    const slowTenants = Array.from({ length: SLOW_TENANTS }, () => nextTenant('slow'));
    const hung: TestReceiver[] = [];
    for (const tenant of slowTenants) {
      const never = await receiver(() => {}); // never answers
      hung.push(never);
      for (let n = 0; n < SLOW_WEBHOOKS; n++)
        await createTestWebhook(storage(), secretBox, { tenantId: tenant, url: `${never.url}/${n}` });
    }
    worker({
      config: {
        concurrency: 16,
        tenantConcurrency: 8,
        timeoutMs: TIMEOUT_MS,
        leaseMs: 4 * TIMEOUT_MS,
        throttledMinDelayMs: 60_000,
      },
    });

    /** Commits one event for the fast tenant and waits for its delivery: commit-to-delivery in ms. */
    const fastLatency = async () => {
      const started = performance.now();
      const [eventId] = (await commitTestEvents(storage(), fastTenant)) as [string];
      await waitUntil(() => arrived.has(eventId), 2 * TIMEOUT_MS, `the fast delivery of ${eventId}`);
      return (arrived.get(eventId) as number) - started;
    };
    await fastLatency(); // warm-up: the worker's first claims and connections
    const unloaded: number[] = [];
    for (let n = 0; n < 10; n++) unloaded.push(await fastLatency());

    for (const tenant of slowTenants) await commitTestEvents(storage(), tenant, { count: SLOW_EVENTS });
    // Every slow tenant has attempts hanging.
    await waitUntil(
      () => hung.every((never) => never.requests.length >= 2),
      2 * TIMEOUT_MS,
      'the slow receivers holding attempts',
    );
    const loaded: number[] = [];
    const until = performance.now() + 1.5 * TIMEOUT_MS;
    while (performance.now() < until) {
      loaded.push(await fastLatency());
      await new Promise((resolve) => setTimeout(resolve, 50));
    }

    const unloadedP99 = percentile(unloaded, 99);
    const loadedP99 = percentile(loaded, 99);
    const figures = `unloaded p99 ${unloadedP99.toFixed(1)} ms, loaded p99 ${loadedP99.toFixed(1)} ms (${loaded.length} deliveries)`;
    // Starved, the fast tenant waits for slots held until the 3 s timeout (seconds, as the issue measured);
    // the floor is a loaded 2-core CI machine's scheduling noise (it once took a p99 past 250 ms).
    expect(loadedP99, figures).toBeLessThan(Math.max(10 * unloadedP99, 500));
    expect(loadedP99, figures).toBeLessThan(TIMEOUT_MS / 2);
  }, 60_000);

  it('cuts off an endpoint that keeps failing: its deliveries are put off with no attempt, then one probe is let through', async () => {
    const tenant = nextTenant('failing');
    const failing = await receiver((_r, _i, res) => {
      res.statusCode = 503;
      res.end();
    });
    await createTestWebhook(storage(), secretBox, { tenantId: tenant, url: failing.url });
    worker({
      config: {
        concurrency: 4,
        tenantConcurrency: 2,
        breakerThreshold: 3,
        breakerCooldownMs: 2_000,
        retryScheduleMs: [10, 10, 10, 10, 10],
      },
    });
    const eventIds = await commitTestEvents(storage(), tenant, { count: 10 });
    await waitUntil(() => failing.requests.length >= 3, 10_000, 'three failed attempts');
    // Open: the deliveries are given back due after the cool-down, not attempted, not counted.
    const deliveries = () =>
      storage().db.selectFrom('deliveries').selectAll().where('event_id', 'in', eventIds).execute();
    await waitUntil(
      async () => (await deliveries()).every((d) => d.locked_by === null),
      10_000,
      'the deliveries given back',
    );
    const cutOff = failing.requests.length;
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(failing.requests.length).toBe(cutOff);
    const putOff = await deliveries();
    expect(putOff.every((d) => d.status === 'pending')).toBe(true);
    expect(putOff.reduce((sum, d) => sum + d.attempt_count, 0)).toBe(cutOff);
    const attempts = await storage()
      .db.selectFrom('delivery_attempts')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where(
        'delivery_id',
        'in',
        putOff.map((d) => d.id),
      )
      .executeTakeFirstOrThrow();
    expect(Number(attempts.n)).toBe(cutOff);
    // At most 2 in flight when the third failure opened it, so at most 4 attempts in all.
    expect(cutOff).toBeLessThanOrEqual(4);
    // Half-open after the cool-down: a probe goes out, and fails: open again.
    await waitUntil(() => failing.requests.length > cutOff, 10_000, 'the probe');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(failing.requests.length).toBe(cutOff + 1);
  }, 60_000);
});
