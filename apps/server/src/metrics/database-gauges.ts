import type { Kysely } from 'kysely';
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
export const outboxDepthGauge: DatabaseGauge = {
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

/**
 * Every database gauge of the service. Runs by state joins this list when the `runs` table exists: a
 * `DatabaseGauge` named `scenario_scoring_runs` with `labelNames: ['state']` whose `read` is
 * `select status, count(*) from runs group by status`.
 */
export const DATABASE_GAUGES: readonly DatabaseGauge[] = [outboxDepthGauge];
