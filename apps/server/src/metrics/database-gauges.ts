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

/** Seconds since an ISO timestamp (0 when there is none, or it is in the future). */
function ageSeconds(iso: string | null | undefined, now: number): number {
  if (iso === null || iso === undefined) return 0;
  return Math.max(0, (now - Date.parse(iso)) / 1000);
}

/**
 * How far behind the webhook backlog is: the age of the oldest event not yet fanned out
 * (`stage="undispatched_events"`, since it was created) and of the oldest delivery due and not yet
 * attempted (`stage="due_deliveries"`, since its attempt came due; a retry scheduled later is not late).
 * 0 when nothing waits.
 */
const deliveryBacklogAgeGauge: DatabaseGauge = {
  name: 'scenario_scoring_webhook_backlog_oldest_age_seconds',
  help: 'Age in seconds of the oldest undispatched event and of the oldest due webhook delivery, database-wide.',
  labelNames: ['stage'],
  async read(db) {
    const now = Date.now();
    const [event, delivery] = await Promise.all([
      db
        .selectFrom('events')
        .select((eb) => eb.fn.min('created_at').as('oldest'))
        .where('dispatched_at', 'is', null)
        .executeTakeFirst(),
      db
        .selectFrom('deliveries')
        .select((eb) => eb.fn.min('next_attempt_at').as('oldest'))
        .where('status', '=', 'pending')
        .where('next_attempt_at', '<=', new Date(now).toISOString())
        .executeTakeFirst(),
    ]);
    return [
      { labels: { stage: 'undispatched_events' }, value: ageSeconds(event?.oldest, now) },
      { labels: { stage: 'due_deliveries' }, value: ageSeconds(delivery?.oldest, now) },
    ];
  },
};

/**
 * The verifiable log's signer: the age of the oldest record still waiting for its leaf (0 when none
 * waits), which grows when no instance sequences and signs. A log with nothing to sign signs nothing, so
 * the last checkpoint's age alone would also grow on an idle log.
 */
const logQueueAgeGauge: DatabaseGauge = {
  name: 'scenario_scoring_log_unsequenced_oldest_age_seconds',
  help: 'Age in seconds of the oldest log record not yet given a leaf and signed into a checkpoint, database-wide.',
  labelNames: [],
  async read(db) {
    const now = Date.now();
    const row = await db
      .selectFrom('log_leaf_queue')
      .select((eb) => eb.fn.min('created_at').as('oldest'))
      .executeTakeFirst();
    return [{ labels: {}, value: ageSeconds(row?.oldest, now) }];
  },
};

/** When the newest checkpoint of any tenant's log was signed (Unix seconds; absent before the first). */
const lastCheckpointGauge: DatabaseGauge = {
  name: 'scenario_scoring_log_last_checkpoint_timestamp_seconds',
  help: 'Unix time in seconds of the newest signed checkpoint of the verifiable log, database-wide.',
  labelNames: [],
  async read(db) {
    // log_checkpoints_created_idx: the newest row, not a scan.
    const row = await db
      .selectFrom('log_checkpoints')
      .select('created_at')
      .orderBy('created_at', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row === undefined ? [] : [{ labels: {}, value: Date.parse(row.created_at) / 1000 }];
  },
};

/**
 * Tenants' logs the sequencer refuses to sign (their stored hashes did not recompute the last signed
 * checkpoint), until an operator clears the fault: alert on any value above 0.
 */
const logFaultsGauge: DatabaseGauge = {
  name: 'scenario_scoring_log_faults',
  help: 'Open log self-check faults (tenant logs whose signing is stopped until an operator clears them), database-wide.',
  labelNames: [],
  async read(db) {
    const row = await db
      .selectFrom('log_faults')
      .select((eb) => eb.fn.countAll<number | string>().as('count'))
      .where('cleared_at', 'is', null)
      .executeTakeFirstOrThrow();
    return [{ labels: {}, value: Number(row.count) }];
  },
};

/** Every database gauge of the service. */
export const DATABASE_GAUGES: readonly DatabaseGauge[] = [
  outboxDepthGauge,
  runsByStateGauge,
  deliveryBacklogAgeGauge,
  logQueueAgeGauge,
  lastCheckpointGauge,
  logFaultsGauge,
];

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
