import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { forEachDatabase } from '../../../test/support/test-databases.js';
import { createTestWebhook, testWebhookConfig } from '../../../test/support/test-webhooks.js';
import { systemClock } from '../../common/clock.js';
import { eraseEvents } from '../../erasure/erasure-store.js';
import { insertEvents, newEvent } from '../../events/event-outbox.js';
import { SecretBox } from '../outbound/secret-box.js';
import { attemptDelivery } from './delivery-attempt.js';
import { type ClaimedDelivery, claimDueDeliveries } from './delivery-claims.js';
import { type DeliveryWrite, recordDeliveryWrites } from './delivery-recorder.js';
import { dispatchEvents } from './event-dispatcher.js';

const secretBox = new SecretBox(randomBytes(32));

/**
 * A receiver's answer to a `policy.escalated` event may echo the subject. An attempt in flight while an
 * erasure empties its event must not store that answer once the erasure's `events` phase has passed: it is
 * recorded as the erasure leaves the attempts it clears (the row, no response body).
 */
forEachDatabase('answers to erased events', ({ storage, kind }) => {
  /** An escalation of `subject` for the tenant, fanned out to a webhook and claimed by `worker`. */
  const claimedEscalation = async (tenantId: string, subject: string, worker: string) => {
    await createTestWebhook(storage(), secretBox, {
      tenantId,
      url: 'http://127.0.0.1:9/hook',
      now: new Date(Date.now() - 1000),
    });
    const event = {
      ...newEvent(
        tenantId,
        'policy.escalated',
        {
          log_cid: 'bafkreiexample',
          subject,
          scores: { base: 0.1, stress: 0.2, recovery: 0.3 },
        } as never,
        new Date(),
      ),
      subjectKey: `key-of-${subject}`,
    };
    await storage()
      .db.transaction()
      .execute((trx) => insertEvents(trx, [event]));
    while ((await dispatchEvents(storage(), new Date())).dispatched > 0);
    // Earlier tests' deliveries (retries due) are not this test's to claim.
    await storage()
      .db.updateTable('deliveries')
      .set({ status: 'cancelled' })
      .where('event_id', '<>', event.id)
      .execute();
    const [claimed] = await claimDueDeliveries(storage(), secretBox, {
      workerId: worker,
      now: new Date(),
      leaseMs: 60_000,
      limit: 10,
    });
    expect(claimed?.eventId).toBe(event.id);
    return { event, claimed: claimed as ClaimedDelivery };
  };

  /** The attempt's write as the worker makes it: the receiver answered 500, echoing the request body. */
  const echoed = async (claimed: ClaimedDelivery): Promise<DeliveryWrite> => {
    const { write } = await attemptDelivery(claimed, {
      send: async (request) => ({
        statusCode: 500,
        error: 'http_500',
        durationMs: 6000,
        responseBody: request.payload,
      }),
      clock: systemClock,
      config: testWebhookConfig(),
    });
    return write;
  };

  const attemptsOf = (deliveryId: string) =>
    storage().db.selectFrom('delivery_attempts').selectAll().where('delivery_id', '=', deliveryId).execute();

  const erase = (event: { id: string; type: string; createdAt: Date }, tenantId: string) =>
    storage()
      .db.transaction()
      .execute((trx) =>
        eraseEvents(
          trx,
          tenantId,
          [{ id: event.id, type: event.type, created_at: event.createdAt.toISOString() }],
          'era_test',
          new Date(),
        ),
      );

  it('stores no answer of an event erased while its attempt was in flight, only the attempt', async () => {
    const tenantId = 'erased-answer-after';
    const { event, claimed } = await claimedEscalation(tenantId, 'inflight-S3', 'worker-after');
    const write = await echoed(claimed);
    expect(write.kind === 'attempt' && write.sent.responseBody).toContain('inflight-S3');
    // The erasure's events phase completes while the attempt is in flight: nothing to clear yet.
    expect(await erase(event, tenantId)).toBe(0);
    await recordDeliveryWrites(storage(), [write], {
      workerId: 'worker-after',
      now: new Date(),
      disableAfterFailingMs: 86_400_000,
    });
    const attempts = await attemptsOf(claimed.id);
    expect(attempts).toHaveLength(1);
    expect(attempts[0]).toMatchObject({ status_code: 500, error: 'http_500', response_body: null });
    expect(JSON.stringify(attempts)).not.toContain('inflight-S3');
  });

  it('checks an answer whose event type the claim does not know, and stores a kept event’s answer', async () => {
    const tenantId = 'erased-answer-untyped';
    const { event, claimed } = await claimedEscalation(tenantId, 'untyped-S3', 'worker-untyped');
    const write = await echoed(claimed);
    if (write.kind !== 'attempt') throw new Error('an attempt was expected');
    const { eventType: _ignored, ...untypedClaim } = write.claim;
    await erase(event, tenantId);
    await recordDeliveryWrites(storage(), [{ ...write, claim: untypedClaim }], {
      workerId: 'worker-untyped',
      now: new Date(),
      disableAfterFailingMs: 86_400_000,
    });
    expect((await attemptsOf(claimed.id))[0]?.response_body).toBeNull();

    // An escalation nobody erased keeps its answer.
    const kept = await claimedEscalation('kept-answer', 'kept-S3', 'worker-kept');
    await recordDeliveryWrites(storage(), [await echoed(kept.claimed)], {
      workerId: 'worker-kept',
      now: new Date(),
      disableAfterFailingMs: 86_400_000,
    });
    expect((await attemptsOf(kept.claimed.id))[0]?.response_body).toContain('kept-S3');
  });

  it('waits for an erasure that is rewriting the event, then stores no answer', async () => {
    const tenantId = 'erased-answer-race';
    const { event, claimed } = await claimedEscalation(tenantId, 'racing-S3', 'worker-race');
    const write = await echoed(claimed);
    let recorded = false;
    let recording: Promise<void> | undefined;
    await storage()
      .db.transaction()
      .execute(async (trx) => {
        await eraseEvents(
          trx,
          tenantId,
          [{ id: event.id, type: event.type, created_at: event.createdAt.toISOString() }],
          'era_race',
          new Date(),
        );
        // The outcome is recorded while the erasure's transaction is open (SQLite: on the one connection,
        // after it; PostgreSQL: its read of the event waits for the erasure's commit).
        recording = recordDeliveryWrites(storage(), [write], {
          workerId: 'worker-race',
          now: new Date(),
          disableAfterFailingMs: 86_400_000,
        }).then(() => {
          recorded = true;
        });
        await new Promise((resolve) => setTimeout(resolve, kind === 'postgres' ? 300 : 50));
        expect(recorded).toBe(false);
      });
    await recording;
    const attempts = await attemptsOf(claimed.id);
    expect(attempts).toHaveLength(1);
    expect(attempts[0]?.response_body).toBeNull();
  });
});
