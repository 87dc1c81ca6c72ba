import type { EnvReader } from '../config/env-reader.js';

/** A retention period: a count of a calendar unit. */
export interface Retention {
  count: number;
  unit: 'h' | 'd' | 'mo' | 'y';
}

/** The erasure worker's settings. */
export interface ErasureConfig {
  /** `LOG_RETENTION`: how long records and their personal data are kept; undefined (the default) keeps them. */
  retention: Retention | undefined;
  /** `ERASURE_POLL_INTERVAL` (1s): how often the worker looks for erasures another instance accepted. */
  pollIntervalMs: number;
  /** `LOG_RETENTION_CHECK_INTERVAL` (1h): how often expired records are looked for. */
  retentionCheckIntervalMs: number;
  /** `ERASURE_BATCH_SIZE` (500): rows handled per transaction. */
  batchSize: number;
  /** `ERASURE_LEASE` (60s): how long a worker's claim on an erasure lasts; each batch renews it. */
  leaseMs: number;
  /**
   * `ERASURE_SETTLE` (30s): how long after it was accepted an erasure by subject starts erasing. A scoring
   * stamped before the erasure began may still be committing: none commits later than
   * SCORE_LOG_MAX_COMMIT_AGE_MS after its stamp (it is refused instead), and this is longer, so every
   * record of the subject stamped before the erasure is stored by the time it is looked for.
   */
  settleMs: number;
  /**
   * `ERASURE_COMPACT_INTERVAL` (5s): the freed space of completed erasures is compacted (PostgreSQL: VACUUM
   * of the tables they changed; SQLite: a WAL checkpoint) at most once per this interval, for every erasure
   * completed since the last time: after the worker's round when it has passed, else in the next round.
   */
  compactIntervalMs: number;
  /**
   * `ERASURE_MAX_PENDING` (100): erasures by subject a tenant may have pending at once; past it
   * `POST /v1/erasures` answers 429 `rate_limited`. 0 for no bound.
   */
  maxPendingPerTenant: number;
}

const RETENTION_PATTERN = /^([1-9][0-9]{0,5})(h|d|mo|y)$/;

/** Parses `25mo`, `760d`, `7y`, `48h`; undefined when it is not one. */
export function parseRetention(text: string): Retention | undefined {
  const match = RETENTION_PATTERN.exec(text.trim());
  if (!match) return undefined;
  return { count: Number(match[1]), unit: match[2] as Retention['unit'] };
}

/** The time before which records have expired at `now` (calendar months and years, in UTC). */
export function retentionCutoff(retention: Retention, now: Date): Date {
  const cutoff = new Date(now.getTime());
  switch (retention.unit) {
    case 'h':
      cutoff.setUTCHours(cutoff.getUTCHours() - retention.count);
      break;
    case 'd':
      cutoff.setUTCDate(cutoff.getUTCDate() - retention.count);
      break;
    case 'mo':
      cutoff.setUTCMonth(cutoff.getUTCMonth() - retention.count);
      break;
    case 'y':
      cutoff.setUTCFullYear(cutoff.getUTCFullYear() - retention.count);
      break;
  }
  return cutoff;
}

/**
 * Reads `LOG_RETENTION` (off), `ERASURE_POLL_INTERVAL` (1s), `LOG_RETENTION_CHECK_INTERVAL` (1h),
 * `ERASURE_BATCH_SIZE` (500), `ERASURE_LEASE` (60s), `ERASURE_SETTLE` (30s; below SCORE_LOG_MAX_COMMIT_AGE_MS, 15 s, a scoring in flight could escape an erasure),
 * `ERASURE_COMPACT_INTERVAL` (5s), `ERASURE_MAX_PENDING` (100 per tenant; 0: no bound).
 */
export function readErasureConfig(reader: EnvReader): ErasureConfig {
  const raw = reader.raw('LOG_RETENTION');
  let retention: Retention | undefined;
  if (raw !== undefined && raw !== '' && raw !== 'off') {
    retention = parseRetention(raw);
    if (!retention) {
      reader.problems.push(
        `LOG_RETENTION must be a duration with a unit, h, d, mo or y, such as 25mo or 760d, or off (got "${raw}")`,
      );
    }
  }
  return {
    retention,
    pollIntervalMs: reader.durationMs('ERASURE_POLL_INTERVAL', 1000, 10),
    retentionCheckIntervalMs: reader.durationMs('LOG_RETENTION_CHECK_INTERVAL', 60 * 60 * 1000, 10),
    batchSize: reader.integer('ERASURE_BATCH_SIZE', 500, 1, 10_000),
    leaseMs: reader.durationMs('ERASURE_LEASE', 60_000, 100),
    settleMs: reader.durationMs('ERASURE_SETTLE', 30_000, 0),
    compactIntervalMs: reader.durationMs('ERASURE_COMPACT_INTERVAL', 5000, 0),
    maxPendingPerTenant: reader.integer('ERASURE_MAX_PENDING', 100, 0, 1_000_000),
  };
}
