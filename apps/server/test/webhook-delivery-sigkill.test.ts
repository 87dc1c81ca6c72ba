import { waitUntil } from '@scenario-scoring/testkit';
import { describe, expect, it } from 'vitest';
import { DATABASE_KINDS } from './support/test-databases.js';
import { commitTestEvents } from './support/test-webhooks.js';
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
  }
});
