import { type Kysely, sql } from 'kysely';

/**
 * `events_tenant_undispatched_idx` on (tenant_id, id) of the events not fanned out yet: the fan-out
 * (webhooks/delivery/event-dispatcher.ts) walks the tenants with such events, an index probe each, and
 * takes each one's oldest, so a tenant with a backlog of escalations does not keep another tenant's events
 * waiting behind it, as one queue in id order did. `events_undispatched_idx` (on id) stays: the outbox
 * gauges read the oldest event of all.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('events_tenant_undispatched_idx')
    .on('events')
    .columns(['tenant_id', 'id'])
    .where(sql.ref('dispatched_at'), 'is', null)
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('events_tenant_undispatched_idx').execute();
}
