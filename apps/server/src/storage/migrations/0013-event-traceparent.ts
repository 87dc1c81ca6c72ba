import type { Kysely } from 'kysely';

/**
 * `events.traceparent`: the W3C trace context of the request that raised the event, when tracing was on,
 * so each delivery attempt's trace links back to it (see tracing/tracing.ts); null otherwise.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('events').addColumn('traceparent', 'text').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was, not as it is typed now
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('events').dropColumn('traceparent').execute();
}
