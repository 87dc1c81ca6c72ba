import { randomBytes } from 'node:crypto';
import { waitUntil } from '@scenario-scoring/testkit';
import { expect, it } from 'vitest';
import { forEachDatabase } from '../../../test/support/test-databases.js';
import {
  commitTestEvents,
  createTestWebhook,
  useDeliveryFixtures,
} from '../../../test/support/test-webhooks.js';
import { DELIVERY_ROW_BYTES, readTenantUsage } from '../../quota/tenant-usage.js';
import { openStorage } from '../../storage/storage.js';
import { BackgroundPacer } from '../../workers/background-pacer.js';
import { webhookWants } from '../event-filter.js';
import { SecretBox } from '../outbound/secret-box.js';
import { DISPATCH_MAX_DELIVERIES, DISPATCH_TENANTS, dispatchEvents } from './event-dispatcher.js';

const secretBox = new SecretBox(randomBytes(32));
const URL = 'http://127.0.0.1:9/hook';

it('a filter of ["*"] takes every event type; otherwise only the listed ones', () => {
  expect(webhookWants(['*'], 'run.failed')).toBe(true);
  expect(webhookWants(['run.completed', 'run.failed'], 'run.failed')).toBe(true);
  expect(webhookWants(['run.completed'], 'webhook.test')).toBe(false);
});

forEachDatabase('the event dispatcher', ({ kind, storage, database }) => {
  const deliveriesOf = (eventId: string) =>
    storage()
      .db.selectFrom('deliveries')
      .selectAll()
      .where('event_id', '=', eventId)
      .orderBy('webhook_id')
      .execute();
  const dispatchAll = async () => {
    while ((await dispatchEvents(storage(), new Date())).dispatched > 0);
  };
  const { worker, receiver } = useDeliveryFixtures(storage, secretBox);
  const deliveryCount = async () =>
    Number(
      (
        await storage()
          .db.selectFrom('deliveries')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  /** The number of deliveries of each of the tenant's events that has any. */
  const deliveriesPerEvent = async (tenantId: string) =>
    (
      await storage()
        .db.selectFrom('deliveries')
        .select((eb) => ['event_id', eb.fn.countAll<number>().as('n')])
        .where('tenant_id', '=', tenantId)
        .groupBy('event_id')
        .execute()
    ).map((row) => Number(row.n));
  /** `count` webhooks of the tenant taking every event, created a second ago. */
  const webhooksOf = async (tenantId: string, count: number, url = URL) => {
    const now = new Date(Date.now() - 1000);
    for (let n = 0; n < count; n++) await createTestWebhook(storage(), secretBox, { tenantId, url, now });
  };

  it(`writes at most ${DISPATCH_MAX_DELIVERIES} deliveries a transaction, an event's all in the same one: 100 events to 48 webhooks`, async () => {
    await dispatchAll();
    await webhooksOf('fan-bound', 48);
    await commitTestEvents(storage(), 'fan-bound', { count: 100 });
    const perTransaction: number[] = [];
    for (;;) {
      const before = await deliveryCount();
      // One call, one transaction.
      const { dispatched } = await dispatchEvents(storage(), new Date());
      if (dispatched === 0) break;
      perTransaction.push((await deliveryCount()) - before);
      // Between transactions every event has all 48 of its deliveries or none.
      expect((await deliveriesPerEvent('fan-bound')).filter((n) => n !== 48)).toEqual([]);
    }
    expect(Math.max(...perTransaction)).toBeLessThanOrEqual(DISPATCH_MAX_DELIVERIES);
    expect(perTransaction.reduce((a, b) => a + b, 0)).toBe(100 * 48);
    expect(perTransaction.length).toBeGreaterThanOrEqual(Math.ceil((100 * 48) / DISPATCH_MAX_DELIVERIES));
    expect(await deliveriesPerEvent('fan-bound')).toEqual(Array(100).fill(48));
  });

  it("fans another tenant's event out in the next transaction, however many events one tenant has waiting before it", async () => {
    await dispatchAll();
    await webhooksOf('fan-backlog', 2);
    await webhooksOf('fan-late', 1);
    await commitTestEvents(storage(), 'fan-backlog', { count: 600 });
    const [late] = (await commitTestEvents(storage(), 'fan-late')) as [string];
    const first = await dispatchEvents(storage(), new Date());
    expect(await deliveriesOf(late)).toHaveLength(1);
    expect(first.more).toBe(true);
    await dispatchAll();
    expect(await deliveriesPerEvent('fan-backlog')).toEqual(Array(600).fill(2));
  });

  it(`takes turns beyond ${DISPATCH_TENANTS} tenants: each fan-out starts after the tenant the last one served last`, async () => {
    await dispatchAll();
    const tenants = Array.from({ length: 40 }, (_, n) => `fan-turns-${String(n).padStart(2, '0')}`);
    for (const tenant of tenants) {
      await webhooksOf(tenant, 1);
      await commitTestEvents(storage(), tenant, { count: 3 });
    }
    // Ten deliveries a transaction: each tenant's first event, ten tenants at a time.
    let after: string | undefined;
    for (let n = 0; n < 4; n++)
      ({ after } = await dispatchEvents(storage(), new Date(), {
        maxDeliveries: 10,
        ...(after !== undefined && { after }),
      }));
    for (const tenant of tenants) expect(await deliveriesPerEvent(tenant)).toEqual([1]);
    await dispatchAll();
  });

  it('fans out a big event alone when its deliveries are more than the bound (never split)', async () => {
    await dispatchAll();
    await webhooksOf('fan-big', 3);
    await commitTestEvents(storage(), 'fan-big', { count: 4 });
    const calls: number[] = [];
    for (;;) {
      const { dispatched } = await dispatchEvents(storage(), new Date(), { maxDeliveries: 2 });
      if (dispatched === 0) break;
      calls.push(dispatched);
    }
    expect(calls).toEqual([1, 1, 1, 1]);
    expect(await deliveriesPerEvent('fan-big')).toEqual([3, 3, 3, 3]);
  });

  it('the delivery worker fans out through the pacer: a paced step per bounded transaction, a pause after each while clients wait', async () => {
    await dispatchAll();
    const hook = await receiver();
    await webhooksOf('fan-paced', 48, hook.url);
    const pauses: number[] = [];
    // Clients wait on requests for the whole test; the pauses are noted, not waited.
    const pacer = new BackgroundPacer({
      share: 0.5,
      quietMs: 3_600_000,
      sleep: async (ms) => {
        pauses.push(ms);
      },
    });
    pacer.noteForeground();
    const steps: number[] = [];
    worker({
      config: { concurrency: 2, tenantConcurrency: 1 },
      pacer: {
        run: (step) =>
          pacer.run(async () => {
            const before = await deliveryCount();
            const result = await step();
            steps.push((await deliveryCount()) - before);
            return result;
          }),
      },
    });
    await commitTestEvents(storage(), 'fan-paced', { count: 100 });
    const rowsThroughPacer = () => steps.reduce((a, b) => a + b, 0);
    await waitUntil(() => rowsThroughPacer() >= 100 * 48, 20_000, 'every delivery made through the pacer');
    expect(rowsThroughPacer()).toBe(100 * 48);
    expect(Math.max(...steps)).toBeLessThanOrEqual(DISPATCH_MAX_DELIVERIES);
    expect(steps.filter((rows) => rows > 0).length).toBeGreaterThanOrEqual(5);
    expect(pauses.length).toBeGreaterThanOrEqual(steps.filter((rows) => rows > 0).length - 1);
    expect(await deliveriesPerEvent('fan-paced')).toEqual(Array(100).fill(48));
  });

  it("fans an event out to each of its tenant's active, non-deleted webhooks whose filter takes it", async () => {
    const now = new Date(Date.now() - 1000);
    const all = await createTestWebhook(storage(), secretBox, { tenantId: 'fan-a', url: URL, now });
    const runs = await createTestWebhook(storage(), secretBox, {
      tenantId: 'fan-a',
      url: URL,
      events: ['run.failed'],
      now,
    });
    const tests = await createTestWebhook(storage(), secretBox, {
      tenantId: 'fan-a',
      url: URL,
      events: ['webhook.test'],
      now,
    });
    const deleted = await createTestWebhook(storage(), secretBox, { tenantId: 'fan-a', url: URL, now });
    const disabled = await createTestWebhook(storage(), secretBox, { tenantId: 'fan-a', url: URL, now });
    await createTestWebhook(storage(), secretBox, { tenantId: 'fan-other', url: URL, now });
    await storage()
      .db.updateTable('webhooks')
      .set({ deleted_at: now.toISOString() })
      .where('id', '=', deleted.id)
      .execute();
    await storage()
      .db.updateTable('webhooks')
      .set({ status: 'disabled' })
      .where('id', '=', disabled.id)
      .execute();

    const [eventId] = (await commitTestEvents(storage(), 'fan-a')) as [string];
    await dispatchAll();
    const deliveries = await deliveriesOf(eventId);
    expect(deliveries.map((d) => d.webhook_id).sort()).toEqual([all.id, tests.id].sort());
    expect(deliveries.every((d) => d.status === 'pending' && d.next_attempt_at !== null)).toBe(true);
    expect(deliveries.map((d) => d.webhook_id)).not.toContain(runs.id);
    const event = await storage()
      .db.selectFrom('events')
      .selectAll()
      .where('id', '=', eventId)
      .executeTakeFirstOrThrow();
    expect(event.dispatched_at).not.toBeNull();
  });

  it("counts each delivery it makes in its tenant's storage usage, once (a fan-out again after a crash adds none)", async () => {
    const now = new Date(Date.now() - 1000);
    for (let n = 0; n < 3; n++)
      await createTestWebhook(storage(), secretBox, { tenantId: 'fan-usage', url: URL, now });
    await createTestWebhook(storage(), secretBox, { tenantId: 'fan-usage-other', url: URL, now });
    const before = await readTenantUsage(storage().db, 'fan-usage');
    const otherBefore = await readTenantUsage(storage().db, 'fan-usage-other');
    const eventIds = await commitTestEvents(storage(), 'fan-usage', { count: 2 });
    const otherIds = await commitTestEvents(storage(), 'fan-usage-other');
    await dispatchAll();
    expect((await readTenantUsage(storage().db, 'fan-usage')) - before).toBe(2 * 3 * DELIVERY_ROW_BYTES);
    expect((await readTenantUsage(storage().db, 'fan-usage-other')) - otherBefore).toBe(DELIVERY_ROW_BYTES);
    // Fanned out again (as after a crash before the events were marked): the deliveries exist, nothing more counts.
    await storage()
      .db.updateTable('events')
      .set({ dispatched_at: null })
      .where('id', 'in', [...eventIds, ...otherIds])
      .execute();
    await dispatchAll();
    expect((await readTenantUsage(storage().db, 'fan-usage')) - before).toBe(2 * 3 * DELIVERY_ROW_BYTES);
  });

  it('creates the first deliveries already leased to the worker that asks for them', async () => {
    await createTestWebhook(storage(), secretBox, {
      tenantId: 'fan-d',
      url: URL,
      now: new Date(Date.now() - 1000),
    });
    const eventIds = await commitTestEvents(storage(), 'fan-d', { count: 3 });
    const lockedUntil = new Date(Date.now() + 60_000).toISOString();
    const { dispatched, claimed } = await dispatchEvents(storage(), new Date(), {
      claim: { workerId: 'worker-a', lockedUntil, max: 2 },
    });
    expect(dispatched).toBe(3);
    expect(claimed).toHaveLength(2);
    expect(eventIds).toEqual(expect.arrayContaining(claimed.map((d) => d.eventId)));
    expect(claimed[0]).toMatchObject({ url: URL, webhookActive: true, trigger: 'scheduled', lockedUntil });
    expect(JSON.parse(claimed[0]?.payload as string)).toMatchObject({ id: claimed[0]?.eventId });
    const rows = await storage()
      .db.selectFrom('deliveries')
      .select('locked_by')
      .where('tenant_id', '=', 'fan-d')
      .orderBy('locked_by')
      .execute();
    expect(rows.map((row) => row.locked_by).sort()).toEqual([null, 'worker-a', 'worker-a'].sort());
  });

  it('does not deliver to a webhook events committed before it existed', async () => {
    const [before] = (await commitTestEvents(storage(), 'fan-b', { now: new Date(Date.now() - 5000) })) as [
      string,
    ];
    await createTestWebhook(storage(), secretBox, { tenantId: 'fan-b', url: URL });
    const [after] = (await commitTestEvents(storage(), 'fan-b', { now: new Date(Date.now() + 1) })) as [
      string,
    ];
    await dispatchAll();
    expect(await deliveriesOf(before)).toHaveLength(0);
    expect(await deliveriesOf(after)).toHaveLength(1);
  });

  // PostgreSQL only: SQLite has one writer, so two instances in one process would only wait on each other's lock.
  if (kind === 'postgres')
    it('fans each event out exactly once when two instances dispatch at the same time', async () => {
      await createTestWebhook(storage(), secretBox, {
        tenantId: 'fan-c',
        url: URL,
        now: new Date(Date.now() - 1000),
      });
      const eventIds = await commitTestEvents(storage(), 'fan-c', { count: 600 });
      const other = await openStorage(database().options);
      try {
        const drain = async (instance: typeof other) => {
          let total = 0;
          for (;;) {
            const { dispatched } = await dispatchEvents(instance, new Date(), { limit: 50 });
            if (dispatched === 0) return total;
            total += dispatched;
          }
        };
        const [mine, theirs] = await Promise.all([drain(storage()), drain(other)]);
        expect(mine + theirs).toBeGreaterThanOrEqual(600);
      } finally {
        await other.close();
      }
      const counts = await storage()
        .db.selectFrom('deliveries')
        .select((eb) => ['event_id', eb.fn.countAll<number>().as('n')])
        .where('tenant_id', '=', 'fan-c')
        .groupBy('event_id')
        .execute();
      expect(counts).toHaveLength(eventIds.length);
      expect(counts.every((row) => Number(row.n) === 1)).toBe(true);
    });
});
