/**
 * One tenant's hanging receiver, with an old backlog, against another tenant's healthy one, on the built
 * server: the hanging tenant holds at most its share of the delivery slots (WEBHOOK_TENANT_CONCURRENCY,
 * half of WEBHOOK_CONCURRENCY by default), and the other tenant's deliveries go out at once, neither
 * behind the backlog nor waiting for a hanging attempt to time out.
 */
import { waitUntil } from '@scenario-scoring/testkit';
import { describe, expect, it } from 'vitest';
import { DATABASE_KINDS } from './support/test-databases.js';
import { commitTestEvents, createTestWebhook } from './support/test-webhooks.js';
import { receivedIds, useServerProcesses } from './support/webhook-server-process.js';

const CONCURRENCY = 8;
const TIMEOUT_MS = 10_000;

describe('webhook delivery shared among tenants by the built server', () => {
  const { prepare, serve, receive } = useServerProcesses();

  for (const kind of DATABASE_KINDS) {
    it(`delivers a tenant's events at once while another's receiver hangs on a backlog (${kind})`, async () => {
      const setup = await prepare(kind, {
        WEBHOOK_CONCURRENCY: String(CONCURRENCY),
        WEBHOOK_TIMEOUT: `${TIMEOUT_MS}ms`,
        WEBHOOK_LEASE: `${3 * TIMEOUT_MS}ms`,
        WEBHOOK_RETRY_SCHEDULE: '1h',
      });
      // Never answers: each attempt holds its slot until the timeout.
      const hanging = await receive(() => {});
      const healthy = await receive();
      const before = new Date(Date.now() - 1000);
      for (const [tenantId, receiver] of [
        ['hostile', hanging],
        ['canary', healthy],
      ] as const) {
        await createTestWebhook(setup.storage, setup.secretBox, { tenantId, url: receiver.url, now: before });
      }
      await commitTestEvents(setup.storage, 'hostile', { count: 40 });
      await serve(setup);
      await waitUntil(() => hanging.requests.length >= CONCURRENCY / 2, 15_000, "the hostile tenant's share");

      const started = Date.now();
      const canaryIds = await commitTestEvents(setup.storage, 'canary', { count: 5 });
      await waitUntil(() => healthy.requests.length >= canaryIds.length, 15_000, "the canary's deliveries");
      const waited = Date.now() - started;
      expect(receivedIds(healthy).sort()).toEqual([...canaryIds].sort());
      // Without a share per tenant, every slot hangs and the canary waits behind 40 attempts of 10 s each.
      expect(waited).toBeLessThan(TIMEOUT_MS / 2);
      expect(hanging.requests).toHaveLength(CONCURRENCY / 2);
    });
  }
});
