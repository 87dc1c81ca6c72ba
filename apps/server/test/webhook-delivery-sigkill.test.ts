import { waitUntil } from '@scenario-scoring/testkit';
import { describe, expect, it } from 'vitest';
import { DATABASE_KINDS } from './support/test-databases.js';
import { commitTestEvents, createTestWebhook } from './support/test-webhooks.js';
import { receivedIds, undelivered, useServerProcesses, webhookTo } from './support/webhook-server-process.js';

describe('webhook delivery by the built server, SIGKILLed', () => {
  const { prepare, serve, receive } = useServerProcesses();

  for (const kind of DATABASE_KINDS) {
    it(`loses no event when killed with deliveries pending and in flight, then restarted (${kind})`, {
      timeout: 60_000,
    }, async () => {
      // A short lease, so the killed worker's claims come back quickly.
      const setup = await prepare(kind, { WEBHOOK_LEASE: '1500ms', WEBHOOK_TIMEOUT: '1s' });
      const receiver = await receive((_r, _i, res) => setTimeout(() => res.end('ok'), 150));
      await webhookTo(setup, receiver);
      const eventIds = await commitTestEvents(setup.storage, 'default', { count: 150 });
      const first = await serve(setup);
      await waitUntil(() => receiver.requests.length >= 10, 15_000, 'deliveries in flight');
      eventIds.push(...(await commitTestEvents(setup.storage, 'default', { count: 100 })));
      await first.stop('SIGKILL', 5_000);
      expect(await undelivered(setup.storage, eventIds)).not.toHaveLength(0);

      await serve(setup);
      eventIds.push(...(await commitTestEvents(setup.storage, 'default', { count: 50 })));
      await waitUntil(
        async () => (await undelivered(setup.storage, eventIds)).length === 0,
        25_000,
        'every delivery',
      );
      // At least once: what was in flight at the kill may arrive twice, nothing is missing.
      expect(new Set(receivedIds(receiver))).toEqual(new Set(eventIds));
    });

    it(`makes each event's deliveries exactly once when killed in the middle of a fan-out of many transactions, then restarted (${kind})`, {
      timeout: 60_000,
    }, async () => {
      const setup = await prepare(kind);
      const receiver = await receive();
      // 400 events to 48 webhooks: 19,200 deliveries, about 20 transactions of at most 1,000.
      for (let n = 0; n < 48; n++)
        await createTestWebhook(setup.storage, setup.secretBox, {
          tenantId: 'default',
          url: receiver.url,
          now: new Date(Date.now() - 1000),
        });
      const eventIds = await commitTestEvents(setup.storage, 'default', { count: 400 });
      const dispatched = async () =>
        (
          await setup.storage.db
            .selectFrom('events')
            .select('id')
            .where('dispatched_at', 'is not', null)
            .execute()
        ).length;
      const first = await serve(setup);
      await waitUntil(async () => (await dispatched()) > 0, 15_000, 'a fan-out transaction committed');
      await first.stop('SIGKILL', 5_000);
      expect(await dispatched()).toBeLessThan(eventIds.length);

      await serve(setup);
      await waitUntil(async () => (await dispatched()) === eventIds.length, 30_000, 'every event fanned out');
      const perEvent = await setup.storage.db
        .selectFrom('deliveries')
        .select((eb) => ['event_id', eb.fn.countAll<number>().as('n')])
        .groupBy('event_id')
        .execute();
      expect(perEvent).toHaveLength(eventIds.length);
      expect(perEvent.filter((row) => Number(row.n) !== 48)).toEqual([]);
    });
  }
});
