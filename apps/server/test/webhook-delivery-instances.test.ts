import { waitUntil } from '@scenario-scoring/testkit';
import { describe, expect, it } from 'vitest';
import { commitTestEvents } from './support/test-webhooks.js';
import { receivedIds, undelivered, useServerProcesses, webhookTo } from './support/webhook-server-process.js';

describe('webhook delivery by two instances of the built server', () => {
  const { prepare, serve, receive } = useServerProcesses();

  it('sharing PostgreSQL, they deliver each of 500 events exactly once', async () => {
    const setup = await prepare('postgres');
    const receiver = await receive();
    await webhookTo(setup, receiver);
    const eventIds = await commitTestEvents(setup.storage, 'default', { count: 250 });
    await Promise.all([serve(setup), serve(setup)]);
    eventIds.push(...(await commitTestEvents(setup.storage, 'default', { count: 250 })));
    await waitUntil(
      async () => (await undelivered(setup.storage, eventIds)).length === 0,
      20_000,
      'every delivery',
    );

    expect(receiver.requests).toHaveLength(500);
    expect(new Set(receivedIds(receiver))).toEqual(new Set(eventIds));
    const attempts = await setup.storage.db.selectFrom('delivery_attempts').select('delivery_id').execute();
    expect(attempts).toHaveLength(500);
    expect(new Set(attempts.map((attempt) => attempt.delivery_id)).size).toBe(500);
    expect(await setup.storage.db.selectFrom('deliveries').select('id').execute()).toHaveLength(500);
  });
});
