import { randomBytes } from 'node:crypto';
import { waitUntil } from '@scenario-scoring/testkit';
import { expect, it } from 'vitest';
import { forEachDatabase } from '../../../test/support/test-databases.js';
import {
  commitTestEvents,
  createTestWebhook,
  useDeliveryFixtures,
} from '../../../test/support/test-webhooks.js';
import { SecretBox } from '../outbound/secret-box.js';
import { PARKED } from './delivery-claims.js';
import { dispatchEvents } from './event-dispatcher.js';

const secretBox = new SecretBox(randomBytes(32));
const EVENTS = 40;
const COOLDOWN_MS = 200;

/**
 * An endpoint that stays cut off must cost next to nothing per delivery waiting for it: its backlog is
 * parked (put off longer after each failed probe, a few kept for the probes) instead of being claimed and
 * put off again at the end of every cool-down, and it is all due at once when a probe is answered.
 */
forEachDatabase('parking the deliveries of an endpoint that stays cut off', ({ storage }) => {
  const { worker, receiver } = useDeliveryFixtures(storage, secretBox);

  it('parks the backlog longer each failed probe, no attempt made, and resumes it when a probe is answered', async () => {
    const tenantId = `parking-${randomBytes(3).toString('hex')}`;
    let healthy = false;
    const endpoint = await receiver((_r, _i, res) => {
      res.statusCode = healthy ? 204 : 503;
      res.end();
    });
    await createTestWebhook(storage(), secretBox, { tenantId, url: endpoint.url });
    worker({
      config: {
        concurrency: 4,
        tenantConcurrency: 2,
        breakerThreshold: 1,
        breakerCooldownMs: COOLDOWN_MS,
        retryScheduleMs: Array.from({ length: 100 }, () => 10),
      },
    });
    const eventIds = await commitTestEvents(storage(), tenantId, { count: EVENTS });
    const deliveries = () =>
      storage().db.selectFrom('deliveries').selectAll().where('event_id', 'in', eventIds).execute();
    // Parked far beyond a cool-down once several probes failed (the parking doubles with each).
    await waitUntil(
      async () => {
        const horizon = new Date(Date.now() + 50 * COOLDOWN_MS).toISOString();
        const parked = (await deliveries()).filter(
          (d) => d.locked_by === PARKED && d.locked_until === null && (d.next_attempt_at ?? '') > horizon,
        );
        return parked.length >= EVENTS - 10;
      },
      20_000,
      'the backlog parked beyond fifty cool-downs',
    );
    const parked = await deliveries();
    expect(parked.every((d) => d.status === 'pending')).toBe(true);
    // Only the probes were attempts: far fewer than the deliveries, whose retry schedule did not advance.
    expect(endpoint.requests.length).toBeLessThan(EVENTS);
    expect(parked.reduce((sum, d) => sum + d.attempt_count, 0)).toBe(endpoint.requests.length);
    // The endpoint recovers: the next probe is answered and the whole backlog is due at once.
    healthy = true;
    await waitUntil(
      async () => (await deliveries()).every((d) => d.status === 'succeeded'),
      // Far less than the parking (over fifty cool-downs): resumed, not waited out.
      5_000,
      'every parked delivery delivered once a probe was answered',
    );
  }, 60_000);

  it('resumes deliveries it did not park (parked before a restart, or by another instance) once the webhook answers it', async () => {
    const tenantId = `parked-elsewhere-${randomBytes(3).toString('hex')}`;
    const endpoint = await receiver((_r, _i, res) => {
      res.statusCode = 204;
      res.end();
    });
    const webhook = await createTestWebhook(storage(), secretBox, { tenantId, url: endpoint.url });
    const parkedIds = await commitTestEvents(storage(), tenantId, { count: 5 });
    // As another worker left them: fanned out, then parked for an hour, no claim.
    while ((await dispatchEvents(storage(), new Date())).dispatched > 0);
    const inAnHour = new Date(Date.now() + 3_600_000).toISOString();
    await storage()
      .db.updateTable('deliveries')
      .set({ locked_by: PARKED, locked_until: null, next_attempt_at: inAnHour })
      .where('event_id', 'in', parkedIds)
      .execute();
    const before = endpoint.requests.length;
    // A fresh worker (a restart) delivers a new event to the webhook: it answers, so what is parked is due.
    worker({ config: { concurrency: 4 } });
    const [fresh] = await commitTestEvents(storage(), tenantId);
    const states = (ids: string[]) =>
      storage()
        .db.selectFrom('deliveries')
        .select(['status', 'webhook_id'])
        .where('event_id', 'in', ids)
        .execute();
    await waitUntil(
      async () => (await states([...parkedIds, fresh as string])).every((d) => d.status === 'succeeded'),
      // Far less than the hour they were parked for.
      10_000,
      'the deliveries parked elsewhere delivered once the webhook answered',
    );
    expect((await states(parkedIds)).every((d) => d.webhook_id === webhook.id)).toBe(true);
    expect(endpoint.requests.length).toBeGreaterThanOrEqual(before + 6);
  }, 60_000);
});
