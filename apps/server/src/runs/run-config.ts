import type { EnvReader } from '../config/env-reader.js';

/** How runs are processed. */
export interface RunConfig {
  /** Items scored and committed per transaction. */
  batchSize: number;
  /** How often a worker looks for runs when nothing woke it. */
  pollIntervalMs: number;
  /** How long a worker owns a run it claimed; each committed batch renews it. */
  leaseMs: number;
  /** Runs processed at once per instance. */
  concurrency: number;
  /** Retries of a batch commit that failed, before the run ends `failed` with `storage_unavailable`. */
  storageRetries: number;
  /** The wait before the first retry; it doubles on each retry. */
  storageRetryBackoffMs: number;
}

/**
 * Reads `RUN_BATCH_SIZE` (500), `RUN_POLL_INTERVAL` (1s), `RUN_LEASE` (30s), `RUN_CONCURRENCY` (4),
 * `RUN_STORAGE_RETRIES` (5) and `RUN_STORAGE_RETRY_BACKOFF` (100ms).
 */
export function readRunConfig(reader: EnvReader): RunConfig {
  return {
    batchSize: reader.integer('RUN_BATCH_SIZE', 500, 1, 1000),
    pollIntervalMs: reader.durationMs('RUN_POLL_INTERVAL', 1000, 1),
    leaseMs: reader.durationMs('RUN_LEASE', 30_000, 100),
    concurrency: reader.integer('RUN_CONCURRENCY', 4, 1, 64),
    storageRetries: reader.integer('RUN_STORAGE_RETRIES', 5, 0, 100),
    storageRetryBackoffMs: reader.durationMs('RUN_STORAGE_RETRY_BACKOFF', 100),
  };
}
