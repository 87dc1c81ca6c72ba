import { waitUntil } from '@scenario-scoring/testkit';
import { describe, expect, it } from 'vitest';
import { DATABASE_KINDS } from './support/test-databases.js';
import { commitTestEvents } from './support/test-webhooks.js';
import { receivedIds, undelivered, useServerProcesses, webhookTo } from './support/webhook-server-process.js';

describe('webhook delivery by the built server, SIGTERMed', () => {
  const { prepare, serve, receive } = useServerProcesses();

  for (const kind of DATABASE_KINDS) {
    it(`finishes and records the attempts in flight, releases the rest, exits 0, and delivers them after a restart (${kind})`, async () => {
      const setup = await prepare(kind, { WEBHOOK_CONCURRENCY: '8' });
      let cut = 0;
      const receiver = await receive((_r, _i, res) => {
        res.once('close', () => {
          if (!res.writableFinished) cut += 1;
        });
        setTimeout(() => res.end('ok'), 300);
      });
      await webhookTo(setup, receiver);
      const eventIds = await commitTestEvents(setup.storage, 'default', { count: 24 });
      const server = await serve(setup);
      await waitUntil(() => receiver.requests.length >= 8, 15_000, 'attempts in flight');
      expect(await server.stop('SIGTERM', 10_000)).toEqual({ code: 0, signal: null });

      const attempted = receiver.requests.length;
      expect(cut).toBe(0);
      const attempts = await setup.storage.db.selectFrom('delivery_attempts').select('status_code').execute();
      expect(attempts).toHaveLength(attempted);
      expect(attempts.every((attempt) => attempt.status_code === 200)).toBe(true);
      const held = await setup.storage.db
        .selectFrom('deliveries')
        .select('id')
        .where('locked_by', 'is not', null)
        .execute();
      expect(held).toHaveLength(0);
      expect(await undelivered(setup.storage, eventIds)).toHaveLength(eventIds.length - attempted);

      await serve(setup);
      await waitUntil(
        async () => (await undelivered(setup.storage, eventIds)).length === 0,
        20_000,
        'every delivery',
      );
      expect(receivedIds(receiver).sort()).toEqual([...eventIds].sort());
    });
  }
});
