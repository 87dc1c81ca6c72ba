import { randomBytes } from 'node:crypto';
import type { Problem, RegisteredWebhook, ReplayQueued } from '@scenario-scoring/api-types';
import { type KyselyPlugin, type RootOperationNode, TableNode } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDatabase } from '../../../test/support/test-databases.js';
import { testFeatures } from '../../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../../test/support/test-server.js';
import { commitTestEvents } from '../../../test/support/test-webhooks.js';
import { systemClock } from '../../common/clock.js';
import { replayEvents } from './webhook-replay.js';

forEachDatabase('replaying a time range of a webhook’s events', ({ kind, storage }) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ storage: storage() });
  });
  afterAll(() => server.close());

  const newTenant = async () => {
    const tenant = `replay-${randomBytes(6).toString('hex')}`;
    return { tenant, key: (await testFeatures(storage()).keys.create(tenant)).key };
  };
  const register = async (key: string, events: string[]) => {
    const response = await server.request('/v1/webhooks/register', {
      key,
      body: { url: 'http://127.0.0.1:9/hook', events, max_deliveries_per_second: 50 },
    });
    expect(response.status, await response.clone().text()).toBe(201);
    return (await response.json()) as RegisteredWebhook;
  };
  const replay = (key: string, id: string, body: unknown, idempotencyKey?: string) =>
    server.request(`/v1/webhooks/${id}/replay`, {
      key,
      body,
      ...(idempotencyKey && { headers: { 'Idempotency-Key': idempotencyKey } }),
    });
  const deliveriesOf = (webhookId: string) =>
    storage().db.selectFrom('deliveries').selectAll().where('webhook_id', '=', webhookId).execute();

  // Found by the fuzz suite: on PostgreSQL the dispatcher's fan-out, in a transaction of its own, could
  // create an event's delivery between the replay's select of the deliveries and its insert, and the replay
  // failed 500 on the unique (webhook_id, event_id). Made to happen here: a plugin inserts that delivery
  // from another connection as soon as the replay's select has answered. (SQLite has one writer: the
  // fan-out cannot commit inside the replay's transaction.)
  it.runIf(kind === 'postgres')(
    'keeps a delivery the fan-out made between its select and its insert, and does not count it as queued',
    async () => {
      const { tenant, key } = await newTenant();
      const webhook = await register(key, ['run.completed']);
      const at = (ms: number) => new Date(Date.now() + ms);
      const [raced, other] = await commitTestEvents(storage(), tenant, {
        count: 2,
        type: 'run.completed',
        now: at(1_000),
      });
      const selects = new Set<unknown>();
      let fannedOut = false;
      const fanOutAfterSelect: KyselyPlugin = {
        transformQuery({ node, queryId }) {
          if (isSelectFrom(node, 'deliveries')) selects.add(queryId);
          return node;
        },
        async transformResult({ result, queryId }) {
          if (selects.has(queryId) && !fannedOut) {
            fannedOut = true;
            const now = new Date().toISOString();
            await storage()
              .db.insertInto('deliveries')
              .values({
                id: `dlv_raced${randomBytes(8).toString('hex')}`,
                tenant_id: tenant,
                webhook_id: webhook.id,
                event_id: raced as string,
                event_type: 'run.completed',
                status: 'pending',
                next_attempt_at: now,
                next_trigger: 'scheduled',
                created_at: now,
                updated_at: now,
              })
              .execute();
          }
          return result;
        },
      };
      const features = testFeatures(storage());
      const outcome = await replayEvents(
        {
          storage: { db: storage().db.withPlugin(fanOutAfterSelect), kind: storage().kind },
          outbox: { notify: () => {} },
          retired: { notify: () => {} },
          policy: { allowedCidrs: [], allowHttp: true },
          secretBox: undefined as never,
          clock: systemClock,
          keyedHash: features.keyedHash,
        },
        { tenantId: tenant, keyId: 'key_race' },
        {
          webhookId: webhook.id,
          body: { since: at(500).toISOString(), until: at(30_000).toISOString() },
          idempotencyKey: undefined,
        },
      );
      expect(fannedOut).toBe(true);
      expect(outcome.value).toMatchObject({ events: 2, queued: 1 });
      const rows = await deliveriesOf(webhook.id);
      expect(rows.map((row) => row.event_id).sort()).toEqual([raced, other].sort());
      expect(rows.every((row) => row.status === 'pending')).toBe(true);
      expect(rows.find((row) => row.event_id === raced)?.next_trigger).toBe('scheduled');
    },
  );

  it('queues the range’s events the webhook takes once, leaves those pending alone, and replays a retry', async () => {
    const { tenant, key } = await newTenant();
    const webhook = await register(key, ['run.completed']);
    expect(webhook.max_deliveries_per_second).toBe(50);
    const at = (ms: number) => new Date(Date.now() + ms);
    const inRange = await commitTestEvents(storage(), tenant, {
      count: 3,
      type: 'run.completed',
      now: at(1_000),
    });
    await commitTestEvents(storage(), tenant, { count: 2, type: 'run.failed', now: at(1_000) });
    await commitTestEvents(storage(), tenant, { count: 1, type: 'run.completed', now: at(60_000) });
    // No worker runs: the fan-out has not made these deliveries; the replay does.
    const range = { since: at(500).toISOString(), until: at(30_000).toISOString() };

    const first = await replay(key, webhook.id, range, 'replay-1');
    expect(first.status, await first.clone().text()).toBe(202);
    expect((await first.json()) as ReplayQueued).toMatchObject({
      webhook_id: webhook.id,
      events: 3,
      queued: 3,
    });
    const rows = await deliveriesOf(webhook.id);
    expect(rows.map((row) => row.event_id).sort()).toEqual([...inRange].sort());
    expect(rows.every((row) => row.status === 'pending' && row.next_trigger === 'manual')).toBe(true);

    const retried = await replay(key, webhook.id, range, 'replay-1');
    expect(retried.status).toBe(202);
    expect(retried.headers.get('idempotent-replayed')).toBe('true');
    // Again under another key: every event is already pending, so none is queued twice.
    const again = await replay(key, webhook.id, range);
    expect((await again.json()) as ReplayQueued).toMatchObject({ events: 3, queued: 0 });
    expect(await deliveriesOf(webhook.id)).toHaveLength(3);

    // A delivered one is queued again, as redeliver would.
    await storage()
      .db.updateTable('deliveries')
      .set({ status: 'succeeded' })
      .where('webhook_id', '=', webhook.id)
      .execute();
    const replayed = await replay(key, webhook.id, range);
    expect((await replayed.json()) as ReplayQueued).toMatchObject({ events: 3, queued: 3 });
    expect(await deliveriesOf(webhook.id)).toHaveLength(3);
    // An erased event (its payload an erasure's tombstone, with no data) is never sent again.
    const [erased] = [...inRange].sort();
    await storage()
      .db.updateTable('events')
      .set({
        payload: JSON.stringify({ id: erased, type: 'run.completed', timestamp: 'x', erasure_id: 'era_x' }),
      })
      .where('id', '=', erased as string)
      .execute();
    await storage()
      .db.updateTable('deliveries')
      .set({ status: 'succeeded' })
      .where('webhook_id', '=', webhook.id)
      .execute();
    const withoutErased = await replay(key, webhook.id, range);
    expect((await withoutErased.json()) as ReplayQueued).toMatchObject({ events: 2, queued: 2 });
    const pending = (await deliveriesOf(webhook.id)).filter((row) => row.status === 'pending');
    expect(pending.map((row) => row.event_id)).not.toContain(erased);
  });

  it('refuses since after until, a range over 7 days and a day that does not exist with 400 validation_failed naming the field', async () => {
    const { key } = await newTenant();
    const webhook = await register(key, ['*']);
    const backwards = await replay(key, webhook.id, {
      since: '2026-11-22T12:00:00Z',
      until: '2026-11-22T08:00:00Z',
    });
    expect(backwards.status).toBe(400);
    expect((await backwards.json()) as Problem).toMatchObject({
      code: 'validation_failed',
      errors: [{ path: '/body/since' }],
    });
    const tooLong = await replay(key, webhook.id, {
      since: '2026-11-01T00:00:00Z',
      until: '2026-11-08T00:00:01Z',
    });
    expect(tooLong.status).toBe(400);
    expect((await tooLong.json()) as Problem).toMatchObject({
      code: 'validation_failed',
      errors: [{ path: '/body/until' }],
    });
    const notADate = await replay(key, webhook.id, { since: 'yesterday', until: '2026-11-08T00:00:00Z' });
    expect(notADate.status).toBe(400);
    // 30 February has the shape of a date-time; it is refused as what it is, not rolled over to March.
    const noSuchDay = await replay(key, webhook.id, {
      since: '2026-02-27T00:00:00Z',
      until: '2026-02-30T00:00:00Z',
    });
    expect(noSuchDay.status).toBe(400);
    expect((await noSuchDay.json()) as Problem).toMatchObject({
      code: 'validation_failed',
      errors: [{ path: '/body/until', message: 'must be a date and time that exists' }],
    });
    const unknown = await replay(key, 'wh_01JZ4VD5E7F9G1H3J5K7M9N1P3', {
      since: '2026-11-01T00:00:00Z',
      until: '2026-11-02T00:00:00Z',
    });
    expect(unknown.status).toBe(404);
  });
});

/** Whether `node` is a SELECT whose first FROM is `table`. */
function isSelectFrom(node: RootOperationNode, table: string): boolean {
  if (node.kind !== 'SelectQueryNode') return false;
  const from = node.from?.froms[0];
  return from !== undefined && TableNode.is(from) && from.table.identifier.name === table;
}
