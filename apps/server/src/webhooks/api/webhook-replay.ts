import type { ReplayQueued, ReplayRequest } from '@scenario-scoring/api-types';
import { isCalendarDateTime } from '../../common/calendar-time.js';
import { newId } from '../../common/ids.js';
import { AppError } from '../../errors/app-error.js';
import { validationDetail } from '../../errors/validation-detail.js';
import { isErasedEventPayload } from '../../events/event-outbox.js';
import { type IdempotentResult, idempotentCreate } from '../../idempotency/idempotent-create.js';
import { DELIVERY_ROW_BYTES, usageUpserts } from '../../quota/tenant-usage.js';
import { chunks } from '../../storage/chunks.js';
import { ALL_EVENTS } from '../event-filter.js';
import { type Caller, requireWebhook, type WebhookServiceDeps } from './webhook-service.js';

/** The longest range a replay takes. */
export const MAX_REPLAY_RANGE_MS = 7 * 24 * 60 * 60 * 1000;
/** The most events a replay queues. */
export const MAX_REPLAY_EVENTS = 10_000;
/** Ids per `in` list, below both dialects' bound-parameter limits. */
const IDS_PER_STATEMENT = 500;

/** A 400 `validation_failed` naming one field of the body. */
function invalid(field: 'since' | 'until', message: string): AppError {
  const errors = [{ path: `/body/${field}`, message }];
  return new AppError('validation_failed', { detail: validationDetail(errors), errors });
}

/**
 * Queues a manual attempt, due now, of every event of the tenant created in [`since`, `until`) that the
 * webhook takes (its filter; events from before the webhook existed and `webhook.test` events, which were
 * another webhook's, are not its): a new delivery for an event it never had, the existing one queued again
 * otherwise, except one still pending, which is left as it is (never queued twice). Refuses `since` after
 * `until`, a range over 7 days, or over 10,000 such events with 400 `validation_failed` naming the field.
 * Idempotent under the request's Idempotency-Key.
 */
export async function replayEvents(
  deps: WebhookServiceDeps,
  caller: Caller,
  request: { webhookId: string; body: ReplayRequest; idempotencyKey: string | undefined },
): Promise<IdempotentResult<ReplayQueued>> {
  const now = deps.clock.now();
  const nowIso = now.toISOString();
  const since = new Date(request.body.since);
  const until = new Date(request.body.until);
  const scope = {
    apiKeyId: caller.keyId,
    tenantId: caller.tenantId,
    keyedHash: deps.keyedHash,
    key: request.idempotencyKey,
    operation: `replayWebhookEvents ${request.webhookId}`,
    body: request.body,
    validate: () => {
      for (const field of ['since', 'until'] as const) {
        if (!isCalendarDateTime(request.body[field]))
          throw invalid(field, 'must be a date and time that exists');
      }
      if (since.getTime() > until.getTime()) throw invalid('since', 'must not be after until');
      if (until.getTime() - since.getTime() > MAX_REPLAY_RANGE_MS)
        throw invalid('until', 'must be at most 7 days after since');
    },
  };
  const outcome = await idempotentCreate(deps.storage.db, scope, now, async (trx) => {
    const webhook = await requireWebhook(trx, caller.tenantId, request.webhookId);
    const filter = JSON.parse(webhook.events) as string[];
    const from = since.toISOString() > webhook.created_at ? since.toISOString() : webhook.created_at;
    const events = await trx
      .selectFrom('events')
      .select(['id', 'type', 'payload'])
      .where('tenant_id', '=', caller.tenantId)
      .where('created_at', '>=', from)
      .where('created_at', '<', until.toISOString())
      .where('type', '!=', 'webhook.test')
      .$if(!filter.includes(ALL_EVENTS), (query) => query.where('type', 'in', filter))
      .orderBy('id')
      .limit(MAX_REPLAY_EVENTS + 1)
      .execute();
    if (events.length > MAX_REPLAY_EVENTS)
      throw invalid('until', `the range holds more than ${MAX_REPLAY_EVENTS} events; narrow it`);
    // An erased event (its payload an erasure's tombstone) is not sent again.
    const replayable = events.filter((event) => !isErasedEventPayload(event.payload));
    let queued = 0;
    for (const chunk of chunks(replayable, IDS_PER_STATEMENT)) {
      const existing = await trx
        .selectFrom('deliveries')
        .select(['id', 'event_id', 'status'])
        .where('webhook_id', '=', webhook.id)
        .where(
          'event_id',
          'in',
          chunk.map((event) => event.id),
        )
        .execute();
      const had = new Set(existing.map((row) => row.event_id));
      const again = existing.filter((row) => row.status !== 'pending').map((row) => row.id);
      if (again.length > 0) {
        await trx
          .updateTable('deliveries')
          .set({
            status: 'pending',
            next_attempt_at: nowIso,
            next_trigger: 'manual',
            locked_until: null,
            locked_by: null,
            updated_at: nowIso,
          })
          .where('id', 'in', again)
          .execute();
      }
      const fresh = chunk.filter((event) => !had.has(event.id));
      let inserted = 0;
      if (fresh.length > 0) {
        // On PostgreSQL the dispatcher's fan-out (another transaction) may create the delivery of an event
        // between the select above and this insert: that one is pending and due, as a replay would leave
        // it, so it is kept and not counted as queued (as an existing pending delivery is not), instead of
        // failing the replay on the unique (webhook_id, event_id).
        const result = await trx
          .insertInto('deliveries')
          .values(
            fresh.map((event) => ({
              id: newId('dlv'),
              tenant_id: caller.tenantId,
              webhook_id: webhook.id,
              event_id: event.id,
              event_type: event.type,
              status: 'pending' as const,
              next_attempt_at: nowIso,
              next_trigger: 'manual' as const,
              created_at: nowIso,
              updated_at: nowIso,
            })),
          )
          .onConflict((conflict) => conflict.columns(['webhook_id', 'event_id']).doNothing())
          .executeTakeFirst();
        inserted = Number(result.numInsertedOrUpdatedRows ?? 0);
        for (const query of usageUpserts(trx, caller.tenantId, inserted * DELIVERY_ROW_BYTES, now))
          await trx.executeQuery(query);
      }
      queued += again.length + inserted;
    }
    const queuedReply: ReplayQueued = {
      webhook_id: webhook.id,
      since: since.toISOString(),
      until: until.toISOString(),
      events: replayable.length,
      queued,
    };
    return queuedReply;
  });
  if (!outcome.replayed) deps.outbox.notify();
  return outcome;
}
