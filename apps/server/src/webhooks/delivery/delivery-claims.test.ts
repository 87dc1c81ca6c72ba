import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { expect, it } from 'vitest';
import { forEachDatabase } from '../../../test/support/test-databases.js';
import { commitTestEvents, createTestWebhook } from '../../../test/support/test-webhooks.js';
import { insertEvents, newEvent } from '../../events/event-outbox.js';
import { openStorage } from '../../storage/storage.js';
import { SecretBox } from '../outbound/secret-box.js';
import { claimDueDeliveries, releaseClaims } from './delivery-claims.js';
import { recordDeliveryWrites } from './delivery-recorder.js';
import { dispatchEvents } from './event-dispatcher.js';

const secretBox = new SecretBox(randomBytes(32));
const URL = 'http://127.0.0.1:9/hook';
const LEASE_MS = 60_000;

forEachDatabase('delivery claims', ({ storage, database, kind }) => {
  const pendingFor = async (tenantId: string, count: number) => {
    const { secret } = await createTestWebhook(storage(), secretBox, {
      tenantId,
      url: URL,
      now: new Date(Date.now() - 1000),
    });
    await commitTestEvents(storage(), tenantId, { count });
    while ((await dispatchEvents(storage(), new Date())).dispatched > 0);
    return secret;
  };
  const claim = (workerId: string, now: Date, limit = 1000, on = storage()) =>
    claimDueDeliveries(on, secretBox, { workerId, now, leaseMs: LEASE_MS, limit });

  it('claims due deliveries with their payload and opened secret, and not again while the lease holds', async () => {
    const secret = await pendingFor('claims-a', 3);
    const now = new Date();
    const claimed = await claim('worker-a', now);
    expect(claimed).toHaveLength(3);
    expect(claimed[0]).toMatchObject({
      webhookActive: true,
      secrets: [secret],
      trigger: 'scheduled',
      failedScheduledAttempts: 0,
    });
    expect(JSON.parse(claimed[0]?.payload as string)).toMatchObject({
      id: claimed[0]?.eventId,
      type: 'webhook.test',
    });
    expect(await claim('worker-b', new Date(now.getTime() + LEASE_MS - 1))).toHaveLength(0);
    expect(await releaseClaims(storage(), 'worker-a')).toBe(3);
    expect(await claim('worker-b', now)).toHaveLength(3);
    await releaseClaims(storage(), 'worker-b');
    await storage()
      .db.updateTable('deliveries')
      .set({ status: 'cancelled' })
      .where('tenant_id', '=', 'claims-a')
      .execute();
  });

  it('claims a delivery with the traceparent of the request that raised its event, so the attempt links to it', async () => {
    const tenantId = 'claims-trace';
    await createTestWebhook(storage(), secretBox, { tenantId, url: URL, now: new Date(Date.now() - 1000) });
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const event = {
      ...newEvent(
        tenantId,
        'webhook.test',
        { webhook_id: 'wh_01JZ4VD5E7F9G1H3J5K7M9N1P3', message: 'traced' },
        new Date(),
      ),
      traceparent,
    };
    await storage()
      .db.transaction()
      .execute((trx) => insertEvents(trx, [event]));
    // Fanned out without a claim, as when the worker is full: the delivery is then claimed on its own.
    while ((await dispatchEvents(storage(), new Date())).dispatched > 0);
    const claimed = await claim('worker-trace', new Date());
    expect(claimed).toHaveLength(1);
    expect(claimed[0]).toMatchObject({ eventId: event.id, traceparent });
    await releaseClaims(storage(), 'worker-trace');
    await storage()
      .db.updateTable('deliveries')
      .set({ status: 'cancelled' })
      .where('tenant_id', '=', tenantId)
      .execute();
  });

  it("gives back only the claims named, and only the worker's own", async () => {
    await pendingFor('claims-give-back', 3);
    const now = new Date();
    const claimed = await claim('worker-give', now);
    expect(claimed).toHaveLength(3);
    const [first, second] = claimed.map((d) => d.id) as [string, string];
    expect(await releaseClaims(storage(), 'worker-other', [first])).toBe(0);
    expect(await releaseClaims(storage(), 'worker-give', [])).toBe(0);
    expect(await releaseClaims(storage(), 'worker-give', [first, second])).toBe(2);
    expect((await claim('worker-take', now)).map((d) => d.id).sort()).toEqual([first, second].sort());
    expect(await releaseClaims(storage(), 'worker-give')).toBe(1);
    await releaseClaims(storage(), 'worker-take');
    await storage()
      .db.updateTable('deliveries')
      .set({ status: 'cancelled' })
      .where('tenant_id', '=', 'claims-give-back')
      .execute();
  });

  it('leaves out a secret sealed under another key rather than failing the claim', async () => {
    const secret = await pendingFor('claims-d', 1);
    const foreign = new SecretBox(randomBytes(32)).seal('whsec_AAAA');
    const [webhook] = await storage()
      .db.selectFrom('webhooks')
      .select('id')
      .where('tenant_id', '=', 'claims-d')
      .execute();
    await storage()
      .db.insertInto('webhook_secrets')
      .values({
        id: 'whs_foreign',
        webhook_id: webhook?.id as string,
        ciphertext: foreign,
        created_at: new Date().toISOString(),
        expires_at: new Date(Date.now() + 60_000).toISOString(),
      })
      .execute();
    const claimed = (await claim('worker-d', new Date())).filter((d) => d.webhookId === webhook?.id);
    expect(claimed.map((d) => d.secrets)).toEqual([[secret]]);
    await releaseClaims(storage(), 'worker-d');
    await storage()
      .db.updateTable('deliveries')
      .set({ status: 'cancelled' })
      .where('tenant_id', '=', 'claims-d')
      .execute();
  });

  it.runIf(kind === 'postgres')(
    'reads the due rows in index order and stops at the limit, whatever the statistics say (no sort of every due row)',
    async () => {
      // A table that grew since its last ANALYZE (never, here): the planner believes few rows are due.
      await pendingFor('claims-plan', 2000);
      const client = new pg.Client({ connectionString: database().options.databaseUrl });
      await client.connect();
      try {
        const plans: string[] = [];
        client.on('notice', (notice) => plans.push(notice.message ?? ''));
        await client.query("load 'auto_explain'");
        await client.query('set auto_explain.log_min_duration = 0');
        await client.query('set auto_explain.log_nested_statements = on');
        await client.query('set auto_explain.log_level = notice');
        const now = new Date().toISOString();
        const lease = new Date(Date.now() + LEASE_MS).toISOString();
        const { rows } = await client.query('select id from claim_due_deliveries($1, $2, $3, $4, $5, $6)', [
          'worker-plan',
          now,
          lease,
          10,
          10,
          '{}',
        ]);
        expect(rows).toHaveLength(10);
        const update = plans.find((plan) => plan.includes('Update on deliveries'));
        // Each tenant's due rows in index order, cut at the limit; the chosen ones looked up by key.
        expect(update).toMatch(
          /Limit[^\n]*\n\s*->\s*Index Scan using deliveries_tenant_due_idx on deliveries x/,
        );
        expect(update).toContain('Index Scan using deliveries_pkey on deliveries k');
        expect(update).not.toMatch(/\b(Seq|Bitmap Heap) Scan\b/);
        // The setting is the function's own: the session's is as it was.
        expect((await client.query('show enable_seqscan')).rows[0]).toEqual({ enable_seqscan: 'on' });
        expect((await client.query('show enable_bitmapscan')).rows[0]).toEqual({ enable_bitmapscan: 'on' });
      } finally {
        await client.end();
      }
      await releaseClaims(storage(), 'worker-plan');
      await storage()
        .db.updateTable('deliveries')
        .set({ status: 'cancelled' })
        .where('tenant_id', '=', 'claims-plan')
        .execute();
    },
  );

  it('shares a claim among tenants, the fewest held first, and never gives one more than its cap however old its backlog', async () => {
    // An old backlog of one tenant, then two deliveries of another.
    await pendingFor('claims-fair-a', 12);
    await storage()
      .db.updateTable('deliveries')
      .set({ next_attempt_at: '2026-01-01T00:00:00.000Z' })
      .where('tenant_id', '=', 'claims-fair-a')
      .execute();
    await pendingFor('claims-fair-b', 2);
    const tenants = (claimed: { tenantId: string }[]) => claimed.map((d) => d.tenantId.slice(-1)).join('');
    const fair = (workerId: string, limit: number, held: Record<string, number>) =>
      claimDueDeliveries(storage(), secretBox, {
        workerId,
        now: new Date(),
        leaseMs: LEASE_MS,
        limit,
        tenantCap: 3,
        held: new Map(Object.entries(held)),
      });
    // Ranks a1 b1 a2 b2 a3: the oldest first within a rank; a's third is its cap.
    expect(tenants(await fair('worker-fair-1', 10, {}))).toBe('ababa');
    expect(await releaseClaims(storage(), 'worker-fair-1')).toBe(5);
    // The worker holds 2 of a's already: a's next ranks third, after both of b's, and only one more fits.
    expect(tenants(await fair('worker-fair-2', 10, { 'claims-fair-a': 2 }))).toBe('bba');
    expect(await releaseClaims(storage(), 'worker-fair-2')).toBe(3);
    // At its cap, a's backlog is passed over, however old.
    expect(tenants(await fair('worker-fair-3', 10, { 'claims-fair-a': 3 }))).toBe('bb');
    await releaseClaims(storage(), 'worker-fair-3');
    await storage()
      .db.updateTable('deliveries')
      .set({ status: 'cancelled' })
      .where('tenant_id', 'in', ['claims-fair-a', 'claims-fair-b'])
      .execute();
  });

  it('claims the most overdue first', async () => {
    await pendingFor('claims-order', 3);
    const rows = await storage()
      .db.selectFrom('deliveries')
      .select('id')
      .where('tenant_id', '=', 'claims-order')
      .orderBy('id')
      .execute();
    const due = ['2026-11-24T08:00:02.000Z', '2026-11-24T08:00:00.000Z', '2026-11-24T08:00:01.000Z'];
    for (const [n, row] of rows.entries()) {
      await storage()
        .db.updateTable('deliveries')
        .set({ next_attempt_at: due[n] as string })
        .where('id', '=', row.id)
        .execute();
    }
    const first = await claim('worker-order', new Date(), 1);
    expect(first.map((d) => d.dueAt)).toEqual(['2026-11-24T08:00:00.000Z']);
    const rest = await claim('worker-order', new Date(), 2);
    expect(rest.map((d) => d.dueAt)).toEqual(['2026-11-24T08:00:01.000Z', '2026-11-24T08:00:02.000Z']);
    await releaseClaims(storage(), 'worker-order');
    await storage()
      .db.updateTable('deliveries')
      .set({ status: 'cancelled' })
      .where('tenant_id', '=', 'claims-order')
      .execute();
  });

  it('gives concurrent instances disjoint claims', async () => {
    await pendingFor('claims-b', 200);
    const other = await openStorage(database().options);
    try {
      const now = new Date();
      const claimAll = async (workerId: string, on: typeof other) => {
        const ids: string[] = [];
        for (
          let batch = await claim(workerId, now, 20, on);
          batch.length > 0;
          batch = await claim(workerId, now, 20, on)
        ) {
          ids.push(...batch.map((d) => d.id));
        }
        return ids;
      };
      const [a, b] = await Promise.all([claimAll('worker-a', storage()), claimAll('worker-b', other)]);
      expect(a.length + b.length).toBe(200);
      expect(new Set([...a, ...b]).size).toBe(200);
    } finally {
      await other.close();
    }
    await storage()
      .db.updateTable('deliveries')
      .set({ status: 'cancelled' })
      .where('tenant_id', '=', 'claims-b')
      .execute();
  });

  it('does not let a worker whose lease expired and was taken over overwrite the newer claim', async () => {
    await pendingFor('claims-c', 1);
    const now = new Date();
    const [stale] = await claim('worker-a', now);
    const later = new Date(now.getTime() + LEASE_MS + 1);
    const [fresh] = await claim('worker-b', later);
    expect(fresh?.id).toBe(stale?.id);
    const sent = { statusCode: 200, error: null, durationMs: 5, responseBody: 'ok' };
    await recordDeliveryWrites(
      storage(),
      [
        {
          kind: 'attempt',
          claim: {
            deliveryId: stale?.id as string,
            webhookId: stale?.webhookId as string,
            lockedUntil: stale?.lockedUntil as string,
          },
          trigger: 'scheduled',
          attemptedAt: now,
          sent,
          verdict: { kind: 'succeeded' },
          next: { status: 'succeeded', failedScheduledAttempts: 0, nextAttemptAt: null },
        },
      ],
      { workerId: 'worker-a', now: later, disableAfterFailingMs: 1000 },
    );
    const row = await storage()
      .db.selectFrom('deliveries')
      .selectAll()
      .where('id', '=', fresh?.id as string)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: 'pending', locked_by: 'worker-b', attempt_count: 0 });
    // The stale attempt happened, so it is listed all the same.
    const attempts = await storage()
      .db.selectFrom('delivery_attempts')
      .select('status_code')
      .where('delivery_id', '=', row.id)
      .execute();
    expect(attempts).toEqual([{ status_code: 200 }]);
  });
});
