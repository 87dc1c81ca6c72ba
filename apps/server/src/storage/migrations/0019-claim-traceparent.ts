import { type Kysely, PostgresAdapter, sql } from 'kysely';
import { CLAIM_DUE_DELIVERIES_0007 } from './0007-claim-due-deliveries.js';

/**
 * PostgreSQL only: `claim_due_deliveries` (0007) also returns the claimed delivery's event's `traceparent`
 * (the column 0013 added), as SQLite's claim does. Without it, a delivery claimed on its own (a retry, or a
 * first attempt the fan-out could not lease to a busy worker) had no trace context on PostgreSQL, so its
 * attempt's span did not link to the request that raised the event. The function is 0007's with that one
 * column more (its result type changes, so it is dropped and created again).
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql.raw(DROP).execute(db);
  await sql.raw(CLAIM_DUE_DELIVERIES_0019).execute(db);
}

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function down(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql.raw(DROP).execute(db);
  await sql.raw(CLAIM_DUE_DELIVERIES_0007).execute(db);
}

const DROP = 'DROP FUNCTION claim_due_deliveries(text, text, text, integer, integer, json)';

/** `text` with `from` replaced by `to` exactly once (0007's text is fixed, so a miss is a mistake here). */
function replacedOnce(text: string, from: string, to: string): string {
  const at = text.indexOf(from);
  if (at === -1 || text.indexOf(from, at + 1) !== -1)
    throw new Error(`0019: "${from}" is not once in 0007's function`);
  return text.slice(0, at) + to + text.slice(at + from.length);
}

/** 0007's function, returning the event's traceparent after its payload. */
const CLAIM_DUE_DELIVERIES_0019 = replacedOnce(
  replacedOnce(
    CLAIM_DUE_DELIVERIES_0007,
    'payload text, succeeded_before boolean, secrets json)',
    'payload text, traceparent text, succeeded_before boolean, secrets json)',
  ),
  'w.url, w.status, w.deleted_at, e.payload,',
  'w.url, w.status, w.deleted_at, e.payload, e.traceparent,',
);
