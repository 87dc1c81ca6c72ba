import type { Kysely } from 'kysely';
import { listTenantUsage } from '../quota/tenant-usage.js';
import type { Database } from '../storage/database.js';

/** One sample of a gauge: its label values and its value. */
export interface GaugeSample {
  labels: Record<string, string>;
  value: number;
}

/**
 * A gauge read from the database at scrape time. The counts are database-wide, so every instance on one
 * PostgreSQL reports the same value: aggregate them with `max`, not `sum`.
 */
export interface DatabaseGauge {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  read(db: Kysely<Database>): Promise<GaugeSample[]>;
}

/**
 * The outbox's depth: events not yet fanned out to deliveries (`stage="undispatched_events"`) and
 * deliveries still waiting for a successful attempt (`stage="pending_deliveries"`).
 */
const outboxDepthGauge: DatabaseGauge = {
  name: 'scenario_scoring_outbox_depth',
  help: 'Undispatched events and pending webhook deliveries, database-wide.',
  labelNames: ['stage'],
  async read(db) {
    const [events, deliveries] = await Promise.all([
      db
        .selectFrom('events')
        .select((eb) => eb.fn.countAll<number | string>().as('count'))
        .where('dispatched_at', 'is', null)
        .executeTakeFirstOrThrow(),
      db
        .selectFrom('deliveries')
        .select((eb) => eb.fn.countAll<number | string>().as('count'))
        .where('status', '=', 'pending')
        .executeTakeFirstOrThrow(),
    ]);
    // PostgreSQL's count(*) is a bigint, which pg returns as a string.
    return [
      { labels: { stage: 'undispatched_events' }, value: Number(events.count) },
      { labels: { stage: 'pending_deliveries' }, value: Number(deliveries.count) },
    ];
  },
};

/** The states a run can be in; each is reported, 0 included, so a dashboard never loses a series. */
const RUN_STATES = ['queued', 'running', 'completed', 'failed'] as const;

/** Runs by state (`state="queued"`, …), database-wide. */
const runsByStateGauge: DatabaseGauge = {
  name: 'scenario_scoring_runs',
  help: 'Batch scoring runs by state, database-wide.',
  labelNames: ['state'],
  async read(db) {
    const rows = await db
      .selectFrom('runs')
      .select(['status', (eb) => eb.fn.countAll<number | string>().as('count')])
      .groupBy('status')
      .execute();
    const counts = new Map(rows.map((row) => [row.status as string, Number(row.count)]));
    return RUN_STATES.map((state) => ({ labels: { state }, value: counts.get(state) ?? 0 }));
  },
};

/** Every database gauge of the service. */
export const DATABASE_GAUGES: readonly DatabaseGauge[] = [outboxDepthGauge, runsByStateGauge];

/**
 * Each tenant's stored bytes (`tenant` label: tenant names are few, chosen by the operator, and are not
 * personal data) and the quota they are held to (`TENANT_STORAGE_QUOTA`; 0 when there is none), database-wide.
 */
export function tenantStorageGauges(quotaBytes: number): DatabaseGauge[] {
  return [
    {
      name: 'scenario_scoring_tenant_storage_bytes',
      help: 'Bytes a tenant has stored (log records, runs, events, delivery attempts, idempotent answers), database-wide.',
      labelNames: ['tenant'],
      async read(db) {
        const usage = await listTenantUsage(db);
        return [...usage].map(([tenant, bytes]) => ({ labels: { tenant }, value: bytes }));
      },
    },
    {
      name: 'scenario_scoring_tenant_storage_quota_bytes',
      help: 'The storage quota a tenant is held to (TENANT_STORAGE_QUOTA); 0 for none.',
      labelNames: ['tenant'],
      async read(db) {
        const usage = await listTenantUsage(db);
        return [...usage.keys()].map((tenant) => ({ labels: { tenant }, value: quotaBytes }));
      },
    },
  ];
}
