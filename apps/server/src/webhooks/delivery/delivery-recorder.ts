import { type Kysely, sql } from 'kysely';
import { newId } from '../../ids.js';
import { chunks } from '../../storage/chunks.js';
import type { Database } from '../../storage/database.js';
import type { Storage } from '../../storage/storage.js';
import { cancelPendingDeliveries } from '../api/webhook-store.js';
import type { DeliveryNextState } from './delivery-outcome.js';
import type { SentAttempt } from './delivery-sender.js';
import type { AttemptVerdict } from './retry-schedule.js';

/** The claim a write is fenced on: it lands only while the delivery is still leased by this claim. */
export interface Claim {
  deliveryId: string;
  webhookId: string;
  /** The `locked_until` this claim set: with `locked_by`, it identifies the claim. */
  lockedUntil: string;
}

/** What a claimed delivery came to: an attempt, or a cancellation because its webhook is gone or disabled. */
export type DeliveryWrite =
  | {
      kind: 'attempt';
      claim: Claim;
      trigger: 'scheduled' | 'manual';
      attemptedAt: Date;
      sent: SentAttempt;
      verdict: AttemptVerdict;
      next: DeliveryNextState;
    }
  | { kind: 'cancel'; claim: Claim };

/** Rows per statement, below both dialects' bound-parameter limits. */
const ROWS_PER_STATEMENT = 400;

/**
 * Records a batch of outcomes in one transaction: every attempt, each delivery's new state, and what the
 * attempts mean for their webhooks. A delivery's state is written only where `locked_by` and
 * `locked_until` still name this worker's claim, so a worker whose lease expired and was taken over cannot
 * overwrite the newer result (its attempt is recorded all the same: it happened).
 */
export async function recordDeliveryWrites(
  storage: Pick<Storage, 'db'>,
  writes: readonly DeliveryWrite[],
  options: { workerId: string; now: Date; disableAfterFailingMs: number },
): Promise<void> {
  const nowIso = options.now.toISOString();
  await storage.db.transaction().execute(async (trx) => {
    const attempts = writes.flatMap((write) => (write.kind === 'attempt' ? [write] : []));
    for (const chunk of chunks(attempts, ROWS_PER_STATEMENT)) {
      const rows = chunk.map((write) => ({
        id: newId('att'),
        delivery_id: write.claim.deliveryId,
        attempted_at: write.attemptedAt.toISOString(),
        status_code: write.sent.statusCode,
        duration_ms: write.sent.durationMs,
        error: write.sent.error,
        response_body: write.sent.responseBody,
        trigger: write.trigger,
      }));
      await trx.insertInto('delivery_attempts').values(rows).execute();
    }
    for (const chunk of chunks(writes, ROWS_PER_STATEMENT)) {
      await updateDeliveries(trx, chunk, options.workerId, nowIso);
    }
    await applyWebhookEffects(trx, attempts, nowIso, options);
  });
}

/** One UPDATE … FROM (VALUES …) for the whole batch: both dialects take it, and it is one round trip. */
async function updateDeliveries(
  db: Kysely<Database>,
  writes: readonly DeliveryWrite[],
  workerId: string,
  nowIso: string,
): Promise<void> {
  const values = writes.map((write) => {
    const attempt = write.kind === 'attempt' ? write : undefined;
    return sql`(${write.claim.deliveryId}, ${write.claim.lockedUntil}, ${attempt?.next.status ?? 'cancelled'}, ${
      attempt ? 1 : 0
    }, ${attempt?.next.failedScheduledAttempts ?? null}, ${attempt?.next.nextAttemptAt?.toISOString() ?? null}, ${
      attempt?.attemptedAt.toISOString() ?? null
    })`;
  });
  await sql`
    update deliveries set
      status = v.column3,
      attempt_count = deliveries.attempt_count + cast(v.column4 as integer),
      failed_scheduled_attempts = coalesce(cast(v.column5 as integer), deliveries.failed_scheduled_attempts),
      next_attempt_at = v.column6,
      next_trigger = 'scheduled',
      last_attempt_at = coalesce(v.column7, deliveries.last_attempt_at),
      locked_until = null,
      locked_by = null,
      updated_at = ${nowIso}
    from (values ${sql.join(values)}) as v
    where deliveries.id = v.column1 and deliveries.locked_by = ${workerId} and deliveries.locked_until = v.column2
  `.execute(db);
}

/**
 * A 410 disables the webhook at once (`endpoint_gone`). Any success resets `failing_since`; a failure sets
 * it if unset; a webhook failing since `disableAfterFailingMs` or longer is disabled (`failing`). Disabling
 * cancels the webhook's pending deliveries.
 */
async function applyWebhookEffects(
  db: Kysely<Database>,
  attempts: readonly Extract<DeliveryWrite, { kind: 'attempt' }>[],
  nowIso: string,
  options: { now: Date; disableAfterFailingMs: number },
): Promise<void> {
  const gone = new Set<string>();
  // Per webhook, in the order the attempts ended: whether one succeeded, and the first failure after that.
  const health = new Map<string, { succeeded: boolean; failingSince: string | undefined }>();
  for (const write of attempts) {
    const { webhookId } = write.claim;
    const state = health.get(webhookId) ?? { succeeded: false, failingSince: undefined };
    if (write.verdict.kind === 'gone') gone.add(webhookId);
    else if (write.verdict.kind === 'succeeded')
      Object.assign(state, { succeeded: true, failingSince: undefined });
    else state.failingSince ??= write.attemptedAt.toISOString();
    health.set(webhookId, state);
  }
  const failing: string[] = [];
  for (const [webhookId, state] of health) {
    if (state.failingSince !== undefined) failing.push(webhookId);
    if (state.succeeded) {
      await db
        .updateTable('webhooks')
        .set({ failing_since: state.failingSince ?? null })
        .where('id', '=', webhookId)
        .$if(state.failingSince === undefined, (query) => query.where('failing_since', 'is not', null))
        .execute();
    } else if (state.failingSince !== undefined) {
      await db
        .updateTable('webhooks')
        .set({ failing_since: state.failingSince })
        .where('id', '=', webhookId)
        .where('failing_since', 'is', null)
        .execute();
    }
  }
  const disabled: string[] = [];
  if (gone.size > 0) disabled.push(...(await disable(db, [...gone], 'endpoint_gone', nowIso)));
  if (failing.length > 0) {
    const cutoff = new Date(options.now.getTime() - options.disableAfterFailingMs).toISOString();
    disabled.push(...(await disable(db, failing, 'failing', nowIso, cutoff)));
  }
  if (disabled.length > 0) await cancelPendingDeliveries(db, disabled, nowIso);
}

/** Disables the active ones of `webhookIds` (only those failing since `failingBefore`, if given); returns their ids. */
async function disable(
  db: Kysely<Database>,
  webhookIds: string[],
  reason: 'endpoint_gone' | 'failing',
  nowIso: string,
  failingBefore?: string,
): Promise<string[]> {
  const rows = await db
    .updateTable('webhooks')
    .set({ status: 'disabled', disabled_reason: reason, updated_at: nowIso })
    .where('id', 'in', webhookIds)
    .where('status', '=', 'active')
    .$if(failingBefore !== undefined, (query) => query.where('failing_since', '<=', failingBefore as string))
    .returning('id')
    .execute();
  return rows.map((row) => row.id);
}
