import { type Kysely, PostgresAdapter, sql } from 'kysely';

/**
 * PostgreSQL only: `claim_due_deliveries(worker_id, now_iso, lease_until, max_rows)`, a delivery worker's
 * claim in one round trip (delivery-claims.ts). It leases up to `max_rows` due deliveries, the most overdue
 * first, skipping rows other instances hold (FOR UPDATE SKIP LOCKED), and returns what their attempts
 * need: the delivery, its webhook (url, status, deleted_at), its event's payload, whether an earlier attempt
 * succeeded (only asked for a manual attempt), and the sealed secrets valid at `now_iso`, current first.
 *
 * A function for the two settings its statement needs, which no single statement can set for itself:
 * - `enable_sort = off` while it is planned: the due rows are read in the order of deliveries_due_idx and
 *   the scan stops at `max_rows`. Left to its statistics, the planner reads every due row and sorts them
 *   whenever it believes few are due, which it believes of a table that grew since its last ANALYZE (a
 *   backlog after an outage, a fresh database): 8 ms a claim over 15,000 due rows, against 0.3 ms.
 *   Restored before it returns.
 * - `synchronous_commit = off` for the transaction it runs in (its own: it is called alone): a lease does
 *   not wait for its WAL flush. It survives a kill -9 of the server as any commit does; only a crash of
 *   PostgreSQL itself can lose it, which makes the delivery claimable again, as an expired lease would (see
 *   withLeaseDurability, the same trade on SQLite).
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql
    .raw(`CREATE FUNCTION claim_due_deliveries(worker_id text, now_iso text, lease_until text, max_rows integer)
  RETURNS TABLE (id text, webhook_id text, event_id text, failed_scheduled_attempts integer, next_trigger text,
    next_attempt_at text, url text, webhook_status text, webhook_deleted_at text, payload text,
    succeeded_before boolean, secrets json)
  LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
DECLARE
  sort_setting text := current_setting('enable_sort');
BEGIN
  PERFORM set_config('enable_sort', 'off', true);
  PERFORM set_config('synchronous_commit', 'off', true);
  RETURN QUERY
  UPDATE deliveries AS d SET locked_until = lease_until, locked_by = worker_id
  FROM webhooks AS w, events AS e
  WHERE d.id IN (
      SELECT c.id FROM deliveries AS c
      WHERE c.status = 'pending' AND c.next_attempt_at <= now_iso
        AND (c.locked_until IS NULL OR c.locked_until < now_iso)
      ORDER BY c.next_attempt_at
      LIMIT max_rows
      FOR UPDATE SKIP LOCKED)
    AND w.id = d.webhook_id AND e.id = d.event_id
  RETURNING d.id, d.webhook_id, d.event_id, d.failed_scheduled_attempts, d.next_trigger, d.next_attempt_at,
    w.url, w.status, w.deleted_at, e.payload,
    (d.next_trigger = 'manual' AND EXISTS (
      SELECT 1 FROM delivery_attempts AS a WHERE a.delivery_id = d.id
        AND a.status_code >= 200 AND a.status_code < 300 AND a.error IS NULL)),
    (SELECT json_agg(s.ciphertext ORDER BY s.expires_at IS NOT NULL, s.created_at DESC)
      FROM webhook_secrets AS s
      WHERE s.webhook_id = d.webhook_id AND (s.expires_at IS NULL OR s.expires_at > now_iso));
  PERFORM set_config('enable_sort', sort_setting, true);
END
$$`)
    .execute(db);
}

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function down(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql.raw('DROP FUNCTION IF EXISTS claim_due_deliveries(text, text, text, integer)').execute(db);
}
