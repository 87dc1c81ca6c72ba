import { CompiledQuery, type Kysely, sql, type Transaction } from 'kysely';
import { newId } from '../../common/ids.js';
import {
  type EventType,
  insertEvents,
  isErasedEventPayload,
  newEvent,
  type OutboxEvent,
} from '../../events/event-outbox.js';
import { rowBytes, USAGE_ON_CONFLICT, UsageTally } from '../../quota/tenant-usage.js';
import { describeError, type Logger } from '../../request-logging/logger.js';
import { chunks } from '../../storage/chunks.js';
import type { Database } from '../../storage/database.js';
import { insertRows, type RowInsert } from '../../storage/row-insert.js';
import type { Storage } from '../../storage/storage.js';
import { OPERATIONAL_EVENT_TYPES } from '../event-filter.js';
import { cancelBacklog, cancelPendingDeliveries, countPendingDeliveries } from '../webhook-registry.js';
import type { DeliveryNextState } from './delivery-outcome.js';
import type { SentAttempt } from './delivery-sender.js';
import type { AttemptVerdict } from './retry-schedule.js';

/** The claim a write is fenced on: it lands only while the delivery is still leased by this claim. */
export interface Claim {
  deliveryId: string;
  webhookId: string;
  /** The `locked_until` this claim set: with `locked_by`, it identifies the claim. */
  lockedUntil: string;
  /** The delivery's tenant, whose storage usage its attempts count in (none counted when absent). */
  tenantId?: string;
  /**
   * The type of the delivery's event. An answer to an event that may carry a subject (SUBJECT_EVENT_TYPES),
   * or of unknown type, is stored only after checking that the event was not erased meanwhile.
   */
  eventType?: EventType | string;
}

/**
 * The event types whose payload holds a subject, and so may be erased (`events.subject_key`): a receiver's
 * answer to them may echo it.
 */
export const SUBJECT_EVENT_TYPES: readonly string[] = ['policy.escalated'];

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

/** A stored attempt. */
interface AttemptRow {
  id: string;
  delivery_id: string;
  attempted_at: string;
  status_code: number;
  duration_ms: number;
  error: string | null;
  response_body: string | null;
  response_body_replaced: number;
  response_body_truncated: number;
  trigger: 'scheduled' | 'manual';
}

/** The attempts' INSERT, its text made once per row count (see rowInsertQuery). */
const ATTEMPT_INSERT: RowInsert<AttemptRow> = {
  table: 'delivery_attempts',
  columns: [
    'id',
    'delivery_id',
    'attempted_at',
    'status_code',
    'duration_ms',
    'error',
    'response_body',
    'response_body_replaced',
    'response_body_truncated',
    'trigger',
  ],
};

/** How a batch of outcomes is recorded, and whom the recorder tells of what it did. */
export interface RecordOptions {
  workerId: string;
  now: Date;
  disableAfterFailingMs: number;
  /**
   * Called with the webhooks this batch disabled, once it committed: the worker drops what it (and this
   * instance's other workers) claimed of them and has not started.
   */
  onDisabled?: (webhookIds: readonly string[]) => void;
  /** Where the background cancellation of a disabled webhook's backlog reports a failure. */
  logger?: Pick<Logger, 'error'>;
}

/**
 * Records a batch of outcomes in one transaction: every attempt, each delivery's new state, and what the
 * attempts mean for their webhooks. A delivery's state is written only where `locked_by` and
 * `locked_until` still name this worker's claim, so a worker whose lease expired and was taken over cannot
 * overwrite the newer result (its attempt is recorded all the same: it happened), nor can one whose
 * delivery was cancelled meanwhile (the cancellation clears the claim).
 */
export async function recordDeliveryWrites(
  storage: Pick<Storage, 'db'>,
  writes: readonly DeliveryWrite[],
  options: RecordOptions,
): Promise<void> {
  const nowIso = options.now.toISOString();
  const received = writes.flatMap((write) => (write.kind === 'attempt' ? [write] : []));
  const answersToCheck = received.filter(mayEchoASubject);
  if (
    writes.length <= ROWS_PER_STATEMENT &&
    answersToCheck.length === 0 &&
    received.every((write) => write.verdict.kind === 'succeeded') &&
    numberedParameters(storage.db)
  ) {
    await recordSucceededInOneStatement(storage.db, writes, received, options.workerId, nowIso);
    return;
  }
  // Filled by the transaction: read only once it committed.
  const webhooksDisabled: string[] = [];
  const backlogs: { id: string; after: string }[] = [];
  await storage.db.transaction().execute(async (trx) => {
    // First, before anything of the batch is written: the answers to events erased meanwhile are dropped.
    const erased = await deliveriesOfErasedEvents(trx, answersToCheck);
    const attempts =
      erased.size === 0 ? received : received.map((write) => withoutErasedAnswer(write, erased));
    for (const chunk of chunks(attempts, ROWS_PER_STATEMENT)) {
      await insertRows(trx, ATTEMPT_INSERT, chunk.map(attemptRow));
    }
    for (const chunk of chunks(writes, ROWS_PER_STATEMENT)) {
      await trx.executeQuery(updateDeliveries(trx, chunk, options.workerId, nowIso));
    }
    const raised = await applyWebhookEffects(trx, attempts, nowIso, options, {
      disabled: webhooksDisabled,
      backlogs,
    });
    raised.push(...(await exhaustedEvents(trx, attempts, options.now)));
    await insertEvents(trx, raised);
    for (const query of attemptsUsage(attempts).upserts(trx, options.now)) await trx.executeQuery(query);
  });
  // Never thrown from here: the batch committed, and a failure would have it recorded again.
  try {
    if (webhooksDisabled.length > 0) options.onDisabled?.(webhooksDisabled);
  } catch (error) {
    options.logger?.error('could not tell the delivery workers of the webhooks a batch disabled', {
      webhookIds: webhooksDisabled,
      error: describeError(error),
    });
  }
  // The backlogs of the webhooks this batch disabled, past their first batch: short transactions of their
  // own, after this one (never attempted meanwhile: a claim cancels them). A failure here is not the
  // batch's: the writes above committed.
  for (const { id, after } of backlogs) {
    cancelBacklog(storage, id, () => new Date().toISOString(), after).catch((error: unknown) => {
      options.logger?.error('could not cancel the pending deliveries of a disabled webhook', {
        webhookId: id,
        error: describeError(error),
      });
    });
  }
}

/** An attempt whose stored answer could echo a subject: a body, to an event that may carry one. */
function mayEchoASubject(write: Extract<DeliveryWrite, { kind: 'attempt' }>): boolean {
  const { eventType } = write.claim;
  return (
    write.sent.responseBody !== null && (eventType === undefined || SUBJECT_EVENT_TYPES.includes(eventType))
  );
}

/**
 * Which of the attempts' deliveries belong to an event an erasure has emptied (its payload a tombstone, see
 * isErasedEventPayload): their receivers' answers, which may echo the erased subject, must not be stored.
 * Called first in the transaction that inserts the attempts, and race-free with an erasure's `events`
 * phase (eraseEvents: in one transaction it rewrites the events' payloads, then, in a later statement,
 * drops the answers stored for their deliveries' attempts):
 *
 * - SQLite: every write goes through the one connection, one transaction at a time, so the erasure's
 *   transaction is wholly before this one (the tombstone is read here, and the answer is not stored) or
 *   wholly after it (its UPDATE of delivery_attempts then finds the answer stored here, and drops it).
 * - PostgreSQL (READ COMMITTED): the events are read `FOR SHARE`, in id order (as the erasure updates
 *   them), and those locks are held until this transaction ends. If the erasure updated an event first,
 *   this read waits for the erasure to commit and then returns the row as it committed it, the tombstone
 *   (a locking read returns the newest version); the answer is not stored. If this read locked the event
 *   first, the erasure's UPDATE of it waits until this transaction has committed its attempts; the
 *   erasure's later UPDATE of delivery_attempts is another statement, with a snapshot taken after that
 *   commit, so it finds those answers and drops them. Either way no answer of an erased event stays.
 *
 * What is kept of such an attempt is what the erasure keeps of the attempts it clears: the row (time,
 * status, duration, error, trigger and the truncated/replaced flags), with no response body.
 */
async function deliveriesOfErasedEvents(
  trx: Transaction<Database>,
  attempts: readonly Extract<DeliveryWrite, { kind: 'attempt' }>[],
): Promise<Set<string>> {
  const erased = new Set<string>();
  if (attempts.length === 0) return erased;
  const locking = numberedParameters(trx);
  const deliveryIds = [...new Set(attempts.map((write) => write.claim.deliveryId))];
  for (const ids of chunks(deliveryIds, ROWS_PER_STATEMENT)) {
    const rows = await trx
      .selectFrom('deliveries')
      .innerJoin('events', 'events.id', 'deliveries.event_id')
      .select(['deliveries.id', 'events.payload'])
      .where('deliveries.id', 'in', ids)
      .orderBy('events.id')
      .$if(locking, (query) => query.forShare('events'))
      .execute();
    for (const row of rows) if (isErasedEventPayload(row.payload)) erased.add(row.id);
  }
  return erased;
}

/** The attempt as stored when its event was erased meanwhile: without the receiver's answer. */
function withoutErasedAnswer(
  write: Extract<DeliveryWrite, { kind: 'attempt' }>,
  erased: ReadonlySet<string>,
): Extract<DeliveryWrite, { kind: 'attempt' }> {
  if (!erased.has(write.claim.deliveryId)) return write;
  return { ...write, sent: { ...write.sent, responseBody: null } };
}

/**
 * What the attempts add to their tenants' storage usage: each attempt's error and stored body (at most
 * 1 KiB) and its row, summed per tenant, so a batch writes one upsert.
 */
function attemptsUsage(attempts: readonly Extract<DeliveryWrite, { kind: 'attempt' }>[]): UsageTally {
  const tally = new UsageTally();
  for (const write of attempts) {
    if (write.claim.tenantId === undefined) continue;
    tally.add(write.claim.tenantId, rowBytes(write.sent.error, write.sent.responseBody));
  }
  return tally;
}

function attemptRow(write: Extract<DeliveryWrite, { kind: 'attempt' }>): AttemptRow {
  return {
    id: newId('att'),
    delivery_id: write.claim.deliveryId,
    attempted_at: write.attemptedAt.toISOString(),
    status_code: write.sent.statusCode,
    duration_ms: write.sent.durationMs,
    error: write.sent.error,
    response_body: write.sent.responseBody,
    response_body_replaced: write.sent.responseBodyReplaced ? 1 : 0,
    response_body_truncated: write.sent.responseBodyTruncated ? 1 : 0,
    trigger: write.trigger,
  };
}

/**
 * PostgreSQL, a batch whose attempts all succeeded (or that only cancels), the usual one: the same writes
 * as the transaction, in one statement and one round trip instead of five (begin, attempts, deliveries,
 * webhooks, commit). The attempts' INSERT and the webhooks' UPDATE ride as data-modifying WITH clauses
 * of the deliveries' UPDATE: one statement commits or fails as a whole, as the transaction did. All a
 * success means for its webhook is the end of its failing spell (`failing_since` back to null); a failure
 * may disable the webhook, which the transaction handles.
 */
async function recordSucceededInOneStatement(
  db: Kysely<Database>,
  writes: readonly DeliveryWrite[],
  attempts: readonly Extract<DeliveryWrite, { kind: 'attempt' }>[],
  workerId: string,
  nowIso: string,
): Promise<void> {
  const update = updateDeliveries(db, writes, workerId, nowIso);
  const parameters = [...update.parameters];
  const mark = (value: unknown) => {
    parameters.push(value);
    return `$${parameters.length}`;
  };
  const clauses: string[] = [];
  if (attempts.length > 0) {
    const tuples = attempts.map((write) => {
      const row = attemptRow(write);
      return `(${ATTEMPT_INSERT.columns.map((column) => mark(row[column])).join(', ')})`;
    });
    const columns = ATTEMPT_INSERT.columns.map((column) => `"${column}"`).join(', ');
    clauses.push(`attempts as (insert into "delivery_attempts" (${columns}) values ${tuples.join(', ')})`);
    const webhookIds = [...new Set(attempts.map((write) => write.claim.webhookId))];
    clauses.push(
      `recovered as (update webhooks set failing_since = null where id in (${webhookIds.map(mark).join(', ')}) and failing_since is not null)`,
    );
    const usage = new Map<string, number>();
    for (const write of attempts) {
      const tenant = write.claim.tenantId;
      if (tenant !== undefined)
        usage.set(tenant, (usage.get(tenant) ?? 0) + rowBytes(write.sent.error, write.sent.responseBody));
    }
    if (usage.size > 0) {
      const rows = [...usage]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([tenant, bytes]) => `(${mark(tenant)}, ${mark(bytes)}::bigint, ${mark(nowIso)})`);
      clauses.push(
        `usage as (insert into "tenant_usage" ("tenant_id", "bytes", "updated_at") values ${rows.join(', ')} ${USAGE_ON_CONFLICT})`,
      );
    }
  }
  const text = clauses.length > 0 ? `with ${clauses.join(', ')} ${update.sql}` : update.sql;
  await db.executeQuery(CompiledQuery.raw(text, parameters));
}

/** PostgreSQL's placeholders are `$1`, `$2`…; SQLite's are `?`. */
function numberedParameters(db: Kysely<Database>): boolean {
  return sql`${0}`.compile(db).sql === '$1';
}

/** Values per row of updateDeliveries' VALUES list. */
const UPDATE_WIDTH = 7;
/** Its texts made so far, by dialect and row count (a batch of outcomes has at most ROWS_PER_STATEMENT). */
const updateTexts = new Map<string, string>();

/**
 * One UPDATE … FROM (VALUES …) for the whole batch: both dialects take it, and it is one round trip. Its
 * text is made once per row count and dialect, and its parameters are a flat list: no query tree of seven
 * value nodes per outcome built and compiled for each batch.
 */
function updateDeliveries(
  db: Kysely<Database>,
  writes: readonly DeliveryWrite[],
  workerId: string,
  nowIso: string,
): CompiledQuery {
  const parameters: unknown[] = [nowIso];
  for (const write of writes) {
    const attempt = write.kind === 'attempt' ? write : undefined;
    parameters.push(
      write.claim.deliveryId,
      write.claim.lockedUntil,
      attempt?.next.status ?? 'cancelled',
      attempt ? 1 : 0,
      attempt?.next.failedScheduledAttempts ?? null,
      attempt?.next.nextAttemptAt?.toISOString() ?? null,
      attempt?.attemptedAt.toISOString() ?? null,
    );
  }
  parameters.push(workerId);
  return CompiledQuery.raw(updateText(db, writes.length), parameters);
}

/**
 * The text of updateDeliveries for `rows` outcomes. Its parameters in the order they appear in the text
 * (SQLite binds `?` by position): `updated_at`, the VALUES rows', the worker's.
 */
function updateText(db: Kysely<Database>, rows: number): string {
  const numbered = numberedParameters(db);
  const key = `${numbered ? 'pg' : 'lite'} ${rows}`;
  let text = updateTexts.get(key);
  if (text !== undefined) return text;
  let next = 0;
  const mark = () => (numbered ? `$${++next}` : '?');
  const updatedAt = mark();
  const tuples: string[] = new Array(rows);
  for (let row = 0; row < rows; row++)
    tuples[row] = `(${Array.from({ length: UPDATE_WIDTH }, mark).join(', ')})`;
  text = `update deliveries set
      status = v.column3,
      attempt_count = deliveries.attempt_count + cast(v.column4 as integer),
      failed_scheduled_attempts = coalesce(cast(v.column5 as integer), deliveries.failed_scheduled_attempts),
      next_attempt_at = v.column6,
      next_trigger = 'scheduled',
      last_attempt_at = coalesce(v.column7, deliveries.last_attempt_at),
      locked_until = null,
      locked_by = null,
      updated_at = ${updatedAt}
    from (values ${tuples.join(', ')}) as v
    where deliveries.id = v.column1 and deliveries.locked_by = ${mark()} and deliveries.locked_until = v.column2`;
  updateTexts.set(key, text);
  return text;
}

/**
 * A 410 disables the webhook at once (`endpoint_gone`). Any success resets `failing_since`; a failure sets
 * it if unset; a webhook failing since `disableAfterFailingMs` or longer is disabled (`failing`). Disabling
 * cancels the webhook's pending deliveries and raises `webhook.disabled` (returned, for the caller to
 * insert in the same transaction; the disabled webhook itself, no longer active, is not sent it). Notes in
 * `noted` the webhooks it disabled, and those whose backlog is left past the first batch cancelled here.
 */
async function applyWebhookEffects(
  db: Kysely<Database>,
  attempts: readonly Extract<DeliveryWrite, { kind: 'attempt' }>[],
  nowIso: string,
  options: { now: Date; disableAfterFailingMs: number },
  noted: { disabled: string[]; backlogs: { id: string; after: string }[] },
): Promise<OutboxEvent[]> {
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
  const disabled: DisabledWebhook[] = [];
  if (gone.size > 0) disabled.push(...(await disable(db, [...gone], 'endpoint_gone', nowIso)));
  if (failing.length > 0) {
    const cutoff = new Date(options.now.getTime() - options.disableAfterFailingMs).toISOString();
    disabled.push(...(await disable(db, failing, 'failing', nowIso, cutoff)));
  }
  const events: OutboxEvent[] = [];
  for (const webhook of disabled) {
    // All its pending deliveries are cancelled by the disabling (counted here, a read): the first batch
    // now, the rest right after this transaction (see cancelPendingDeliveries).
    const cancelled = await countPendingDeliveries(db, webhook.id);
    const first = await cancelPendingDeliveries(db, webhook.id, nowIso);
    noted.disabled.push(webhook.id);
    if (first.next !== undefined) noted.backlogs.push({ id: webhook.id, after: first.next });
    const data = {
      webhook_id: webhook.id,
      reason: webhook.reason,
      failing_since: webhook.reason === 'endpoint_gone' ? null : webhook.failingSince,
      disabled_at: nowIso,
      cancelled_deliveries: cancelled,
    };
    events.push(newEvent(webhook.tenantId, 'webhook.disabled', data, options.now));
  }
  return events;
}

/** A webhook the attempts disabled. */
interface DisabledWebhook {
  id: string;
  tenantId: string;
  reason: 'endpoint_gone' | 'failing';
  failingSince: string | null;
}

/** Disables the active ones of `webhookIds` (only those failing since `failingBefore`, if given); returns them. */
async function disable(
  db: Kysely<Database>,
  webhookIds: string[],
  reason: 'endpoint_gone' | 'failing',
  nowIso: string,
  failingBefore?: string,
): Promise<DisabledWebhook[]> {
  const rows = await db
    .updateTable('webhooks')
    .set({ status: 'disabled', disabled_reason: reason, updated_at: nowIso })
    .where('id', 'in', webhookIds)
    .where('status', '=', 'active')
    .$if(failingBefore !== undefined, (query) => query.where('failing_since', '<=', failingBefore as string))
    .returning(['id', 'tenant_id', 'failing_since'])
    .execute();
  return rows.map((row) => ({
    id: row.id,
    tenantId: row.tenant_id,
    reason,
    failingSince: row.failing_since,
  }));
}

/**
 * `delivery.exhausted` for each delivery whose last scheduled attempt failed in this batch and that is
 * now `failed` (its write landed: the claim was still this worker's). A 410 raises none (its webhook's
 * `webhook.disabled` says more), nor does a delivery of an operational event, so a failing endpoint
 * subscribed to them never feeds a chain of events about itself.
 */
async function exhaustedEvents(
  db: Kysely<Database>,
  attempts: readonly Extract<DeliveryWrite, { kind: 'attempt' }>[],
  now: Date,
): Promise<OutboxEvent[]> {
  const last = new Map(
    attempts
      .filter(
        (write) =>
          write.trigger === 'scheduled' &&
          write.next.status === 'failed' &&
          write.verdict.kind !== 'gone' &&
          write.verdict.kind !== 'succeeded',
      )
      .map((write) => [write.claim.deliveryId, write]),
  );
  if (last.size === 0) return [];
  const rows = await db
    .selectFrom('deliveries')
    .select(['id', 'tenant_id', 'webhook_id', 'event_id', 'event_type', 'attempt_count'])
    .where('id', 'in', [...last.keys()])
    .where('status', '=', 'failed')
    .where('event_type', 'not in', OPERATIONAL_EVENT_TYPES)
    .execute();
  return rows.map((row) =>
    newEvent(
      row.tenant_id,
      'delivery.exhausted',
      {
        webhook_id: row.webhook_id,
        delivery_id: row.id,
        event_id: row.event_id,
        event_type: row.event_type as OutboxEvent['type'],
        attempt_count: row.attempt_count,
        last_status_code: last.get(row.id)?.sent.statusCode ?? 0,
      },
      now,
    ),
  );
}
