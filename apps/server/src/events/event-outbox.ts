import type { EventPayloads } from '@scenario-scoring/api-types';
import { CompiledQuery, type Kysely, sql, type Transaction } from 'kysely';
import { newId } from '../common/ids.js';
import { chunks } from '../storage/chunks.js';
import type { Database } from '../storage/database.js';
import { tracing } from '../tracing/tracing.js';

/** The type of an event: `run.completed`, `run.failed`, `policy.escalated` or `webhook.test`. */
export type EventType = keyof EventPayloads;

/** The `data` of an event of type `T`, as the contract's `webhooks:` section declares it. */
export type EventData<T extends EventType> = EventPayloads[T]['data'];

/** An event ready for the outbox: its id and the exact bytes every delivery of it sends. */
export interface OutboxEvent {
  readonly id: string;
  readonly tenantId: string;
  readonly type: EventType;
  /** `{"id","type","timestamp","data"}` serialised once, so every attempt signs the same body. */
  readonly payload: string;
  readonly createdAt: Date;
  /** The tenant-keyed hash of the subject the payload carries (`policy.escalated`), so an erasure finds it. */
  readonly subjectKey?: string | undefined;
  /** The W3C traceparent of the request that raised it, when tracing is on (see tracing/tracing.ts). */
  readonly traceparent?: string | undefined;
}

/** A new event of `type` for `tenantId`, with a new `evt_` id, timestamped `now`. */
export function newEvent<T extends EventType>(
  tenantId: string,
  type: T,
  data: EventData<T>,
  now: Date,
): OutboxEvent {
  const id = newId('evt');
  const payload = JSON.stringify({ id, type, timestamp: now.toISOString(), data });
  const traceparent = tracing?.requestTraceparent();
  return { id, tenantId, type, payload, createdAt: now, ...(traceparent && { traceparent }) };
}

/** Rows per INSERT, well below both dialects' bound-parameter limits. */
const EVENTS_PER_STATEMENT = 500;

/**
 * Writes events to the outbox. Call it inside the transaction of the change that raises them, so the
 * change and its events commit together or not at all; then call `OutboxSignal.notify()` after the commit.
 * With `dispatchedAt`, they are written already fanned out (their deliveries written by the caller), so
 * the dispatcher leaves them alone.
 */
export async function insertEvents(
  db: Kysely<Database> | Transaction<Database>,
  events: readonly OutboxEvent[],
  options: { dispatchedAt?: string } = {},
): Promise<void> {
  for (const query of eventInserts(db, events, options)) await db.executeQuery(query);
}

/** The statements `insertEvents` runs (none for no events), compiled with `db`, to run in a transaction of the caller's. */
export function eventInserts(
  db: Kysely<Database>,
  events: readonly OutboxEvent[],
  options: { dispatchedAt?: string } = {},
): CompiledQuery[] {
  return Array.from(chunks(events, EVENTS_PER_STATEMENT), (chunk) =>
    db
      .insertInto('events')
      .values(
        chunk.map((event) => ({
          id: event.id,
          tenant_id: event.tenantId,
          type: event.type,
          payload: event.payload,
          created_at: event.createdAt.toISOString(),
          subject_key: event.subjectKey ?? null,
          traceparent: event.traceparent ?? null,
          dispatched_at: options.dispatchedAt ?? null,
        })),
      )
      .compile(),
  );
}

/**
 * The statements writing `events` only for tenants with a webhook that takes them: an active, undeleted
 * webhook of the event's tenant whose filter names its type or `*`, checked in the statement itself, so
 * in the transaction that commits the change (never stale: a webhook registered before the commit is
 * seen, one registered after it would not have received the event anyway, as events are fanned out to
 * the webhooks present when the dispatcher takes them). For events that carry personal data
 * (`policy.escalated` holds the subject): nobody would receive one written for no listener, so it is
 * not lost, and the subject is not stored where nothing needs it.
 */
export function subscribedEventInserts(
  db: Kysely<Database>,
  events: readonly OutboxEvent[],
): CompiledQuery[] {
  const numbered = sql`${0}`.compile(db).sql === '$1';
  return Array.from(chunks(events, EVENTS_PER_STATEMENT), (chunk) => {
    const { text, parameters } = subscribedEventInsert(chunk, numbered ? 1 : undefined);
    return CompiledQuery.raw(text, parameters);
  });
}

/** At most this many events in one `subscribedEventInsert`, well below both dialects' parameter limits. */
export const SUBSCRIBED_EVENTS_PER_STATEMENT = EVENTS_PER_STATEMENT;

/**
 * The text of one `subscribedEventInserts` INSERT of `events` (at most SUBSCRIBED_EVENTS_PER_STATEMENT) and
 * its parameters: numbered from `firstParameter` (PostgreSQL's `$n`, so the INSERT can be a WITH query of a
 * larger statement, the score log's: score-log-store.ts), or `?` when it is undefined (SQLite). With
 * `returning`, the INSERT returns those columns of the rows it wrote.
 */
export function subscribedEventInsert(
  events: readonly OutboxEvent[],
  firstParameter: number | undefined,
  returning?: string,
): { text: string; parameters: unknown[] } {
  const parameters: unknown[] = [];
  const mark = (value: unknown) => {
    parameters.push(value);
    return `cast(${firstParameter === undefined ? '?' : `$${firstParameter + parameters.length - 1}`} as text)`;
  };
  const rows = events.map(
    (event) =>
      `select ${mark(event.id)} as id, ${mark(event.tenantId)} as tenant_id, ${mark(event.type)} as type, ${mark(event.payload)} as payload, ${mark(event.createdAt.toISOString())} as created_at, ${mark(event.subjectKey ?? null)} as subject_key, ${mark(event.traceparent ?? null)} as traceparent`,
  );
  const text = `insert into "events" ("id", "tenant_id", "type", "payload", "created_at", "subject_key", "traceparent") select v.id, v.tenant_id, v.type, v.payload, v.created_at, v.subject_key, v.traceparent from (${rows.join(' union all ')}) as v where exists (select 1 from "webhooks" as w where w.tenant_id = v.tenant_id and w.status = 'active' and w.deleted_at is null and (w.events like '%"*"%' or w.events like '%"' || v.type || '"%'))${returning === undefined ? '' : ` returning ${returning}`}`;
  return { text, parameters };
}

/**
 * Whether an event's stored payload is an erasure's tombstone (`{id, type, timestamp, erasure_id}`, written by
 * erasure/erasure-store.ts in place of a payload that held an erased subject): every event the API raises
 * has `data`, a tombstone has none. Such an event is never sent again, by a retry, a redelivery or a replay.
 */
export function isErasedEventPayload(payload: string): boolean {
  return !payload.includes('"data":') && payload.includes('"erasure_id":');
}

/**
 * Wakes this process's delivery workers as soon as events are committed, so the first attempt does not
 * wait for the next poll. Other instances find the events by polling.
 */
export class OutboxSignal {
  readonly #listeners = new Set<() => void>();

  /** Tells the listeners that events were committed. */
  notify(): void {
    for (const listener of this.#listeners) listener();
  }

  /** Calls `listener` on every notify; returns the function that unsubscribes it. */
  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
