import { type Kysely, PostgresAdapter, sql } from 'kysely';

/**
 * Fair claims of due deliveries (delivery-claims.ts).
 *
 * Both dialects: due deliveries are found per tenant, through `deliveries_tenant_due_idx` on
 * (tenant_id, next_attempt_at) of the pending rows, which replaces `deliveries_due_idx` on next_attempt_at
 * alone. A claim walks the tenants with pending deliveries (one index probe each) and takes each one's most
 * overdue rows, so a tenant's deliveries are found at once however large and old another tenant's backlog is.
 *
 * PostgreSQL only: `claim_due_deliveries(worker_id, now_iso, lease_until, max_rows, tenant_cap, held)`, a
 * delivery worker's claim in one round trip. Of the due, unleased deliveries it leases up to `max_rows`,
 * sharing them among tenants: a tenant's k-th most overdue delivery ranks at k plus the deliveries the
 * worker already holds for that tenant (`held`, a json object of tenant id to count), lowest rank first,
 * then the most overdue; and no tenant is given more than `tenant_cap` less what it holds. Rows other
 * instances hold are skipped (FOR UPDATE SKIP LOCKED), so concurrent instances claim disjoint sets without
 * waiting on each other. It returns what the attempts need: the delivery, its webhook (url, status,
 * deleted_at), its event's payload, whether an earlier attempt succeeded (only asked for a manual attempt),
 * and the sealed secrets valid at `now_iso`, current first.
 *
 * A function for the two settings its statement needs, which no single statement can set for itself:
 * - `enable_seqscan = off` and `enable_bitmapscan = off` while it is planned: each tenant's due rows are
 *   read in the order of the index and the scan stops at its limit, and the chosen rows are looked up by
 *   their key. Left to its statistics, the planner reads every due row and sorts them whenever it believes
 *   few are due, which it believes of a table that grew since its last ANALYZE (a backlog after an outage,
 *   a fresh database), a cost that grows with the backlog (docs/benchmarks.md). Restored before it returns.
 * - `synchronous_commit = off` for the transaction it runs in (its own: it is called alone): a lease does
 *   not wait for its WAL flush. It survives a kill -9 of the server as any commit does; only a crash of
 *   PostgreSQL itself can lose it, which makes the delivery claimable again, as an expired lease would (see
 *   leaseWrite, the same trade on SQLite).
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('deliveries_tenant_due_idx')
    .on('deliveries')
    .columns(['tenant_id', 'next_attempt_at'])
    .where(sql.ref('status'), '=', 'pending')
    .execute();
  await db.schema.dropIndex('deliveries_due_idx').execute();
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql.raw(CLAIM_DUE_DELIVERIES_0007).execute(db);
}

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function down(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter)
    await sql
      .raw('DROP FUNCTION IF EXISTS claim_due_deliveries(text, text, text, integer, integer, json)')
      .execute(db);
  await db.schema
    .createIndex('deliveries_due_idx')
    .on('deliveries')
    .column('next_attempt_at')
    .where(sql.ref('status'), '=', 'pending')
    .execute();
  await db.schema.dropIndex('deliveries_tenant_due_idx').execute();
}

/** The function as this migration creates it (0019 adds the event's traceparent, and its down restores this). */
export const CLAIM_DUE_DELIVERIES_0007 = `CREATE FUNCTION claim_due_deliveries(worker_id text, now_iso text, lease_until text, max_rows integer,
    tenant_cap integer, held json)
  RETURNS TABLE (id text, tenant_id text, webhook_id text, event_id text, failed_scheduled_attempts integer,
    next_trigger text, next_attempt_at text, url text, webhook_status text, webhook_deleted_at text,
    payload text, succeeded_before boolean, secrets json)
  LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
DECLARE
  seqscan_setting text := current_setting('enable_seqscan');
  bitmapscan_setting text := current_setting('enable_bitmapscan');
BEGIN
  PERFORM set_config('enable_seqscan', 'off', true);
  PERFORM set_config('enable_bitmapscan', 'off', true);
  PERFORM set_config('synchronous_commit', 'off', true);
  RETURN QUERY
  WITH RECURSIVE pending_tenants(tenant_id) AS (
    (SELECT p.tenant_id FROM deliveries AS p WHERE p.status = 'pending' ORDER BY p.tenant_id LIMIT 1)
    UNION ALL
    SELECT (SELECT p.tenant_id FROM deliveries AS p
        WHERE p.status = 'pending' AND p.tenant_id > t.tenant_id ORDER BY p.tenant_id LIMIT 1)
    FROM pending_tenants AS t WHERE t.tenant_id IS NOT NULL
  ),
  rooms AS (
    SELECT t.tenant_id, coalesce(h.value::integer, 0) AS held_count
    FROM pending_tenants AS t LEFT JOIN json_each_text(held) AS h ON h.key = t.tenant_id
    WHERE t.tenant_id IS NOT NULL AND coalesce(h.value::integer, 0) < tenant_cap
  ),
  ranked AS (
    SELECT c.id, c.next_attempt_at, r.held_count, tenant_cap - r.held_count AS room,
      row_number() OVER (PARTITION BY r.tenant_id ORDER BY c.next_attempt_at, c.id) AS n
    FROM rooms AS r CROSS JOIN LATERAL (
      SELECT x.id, x.next_attempt_at FROM deliveries AS x
      WHERE x.tenant_id = r.tenant_id AND x.status = 'pending' AND x.next_attempt_at <= now_iso
        AND (x.locked_until IS NULL OR x.locked_until < now_iso)
      ORDER BY x.next_attempt_at
      LIMIT max_rows) AS c
  ),
  chosen AS (
    SELECT k.id FROM deliveries AS k
    WHERE k.id = ANY (ARRAY(SELECT q.id FROM ranked AS q WHERE q.n <= q.room
        ORDER BY q.held_count + q.n, q.next_attempt_at LIMIT max_rows))
      -- Rechecked on the row as locked. Not as 'k.status = ...', which would let the planner read the
      -- partial index of every pending row instead of looking the chosen few up by key.
      AND coalesce(k.status, '') = 'pending' AND (k.locked_until IS NULL OR k.locked_until < now_iso)
    FOR UPDATE SKIP LOCKED
  )
  UPDATE deliveries AS d SET locked_until = lease_until, locked_by = worker_id
  FROM webhooks AS w, events AS e
  WHERE d.id IN (SELECT chosen.id FROM chosen) AND w.id = d.webhook_id AND e.id = d.event_id
  RETURNING d.id, d.tenant_id, d.webhook_id, d.event_id, d.failed_scheduled_attempts, d.next_trigger,
    d.next_attempt_at, w.url, w.status, w.deleted_at, e.payload,
    (d.next_trigger = 'manual' AND EXISTS (
      SELECT 1 FROM delivery_attempts AS a WHERE a.delivery_id = d.id
        AND a.status_code >= 200 AND a.status_code < 300 AND a.error IS NULL)),
    (SELECT json_agg(s.ciphertext ORDER BY s.expires_at IS NOT NULL, s.created_at DESC)
      FROM webhook_secrets AS s
      WHERE s.webhook_id = d.webhook_id AND (s.expires_at IS NULL OR s.expires_at > now_iso));
  PERFORM set_config('enable_seqscan', seqscan_setting, true);
  PERFORM set_config('enable_bitmapscan', bitmapscan_setting, true);
END
$$`;
