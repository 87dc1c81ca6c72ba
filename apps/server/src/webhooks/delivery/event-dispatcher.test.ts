import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { forEachDatabase } from '../../../test/support/test-databases.js';
import { commitTestEvents, createTestWebhook } from '../../../test/support/test-webhooks.js';
import { DELIVERY_ROW_BYTES, readTenantUsage } from '../../quota/tenant-usage.js';
import { openStorage } from '../../storage/storage.js';
import { webhookWants } from '../event-filter.js';
import { SecretBox } from '../outbound/secret-box.js';
import { dispatchEvents } from './event-dispatcher.js';

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
