import { availableParallelism } from 'node:os';
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
  /** The wait before the first retry; it doubles on each retry, up to 5 s (or this wait, when longer). */
  storageRetryBackoffMs: number;
  /** Worker threads that score batches; 0 scores on the event loop. */
  scoringThreads: number;
  /**
   * Claims ended without a release (the instance died or lost its lease) after which a run that still has
   * not ended fails with `internal_error`: a run that crashes its instance every time it is processed must
   * not take every instance down, one after the other, forever. Graceful stops release and do not count.
   */
  maxClaims: number;
  /** The bounds of a run submitted as NDJSON; DEFAULT_UPLOAD_LIMITS when absent. */
  upload?: RunUploadLimits;
  /**
   * The share of the time (percent) that background work (runs' batch commits, NDJSON uploads' writes) may
   * take while requests clients wait on are being served (workers/background-pacer.ts); 100 never paces.
   * 50 when absent.
   */
  backgroundPercent?: number;
  /**
   * Items a tenant may have waiting (in runs queued or running, not attempted yet, and in this instance's
   * NDJSON uploads in progress); a run past it is refused 429 `rate_limited`. DEFAULT_MAX_PENDING_ITEMS
   * when absent.
   */
  maxPendingItems?: number;
}

/** Two full-size NDJSON runs. */
export const DEFAULT_MAX_PENDING_ITEMS = 10_000_000;

/** The bounds of a run's NDJSON upload (run-upload.ts). */
export interface RunUploadLimits {
  /** Bytes of the body (as decompressed): past them the upload is refused 413. */
  maxBytes: number;
  /** Lines of the body: past them the upload is refused 413. */
  maxLines: number;
  /** Bytes of one line: a longer line is an item that fails (`payload_too_large`). */
  maxLineBytes: number;
  /** The upload is dropped after this long without a byte. */
  idleTimeoutMs: number;
  /**
   * The lease of an upload, renewed every quarter of it while the body arrives: an upload whose server
   * died is swept away (with its lines) once it passed.
   */
  leaseMs?: number;
  /** Uploads a tenant may have in progress at once on an instance; past them 429 `rate_limited`. 2 when absent. */
  maxUploadsPerTenant?: number;
  /** The longest an upload may take, however steadily it sends: past it 408 `request_timeout`. 1 hour when absent. */
  maxDurationMs?: number;
}

/** 1 GiB, 5,000,000 lines, lines up to 64 KiB, 30 s without a byte, a lease of 2 minutes, 2 at once per tenant. */
export const DEFAULT_UPLOAD_LIMITS: RunUploadLimits = {
  maxBytes: 1024 ** 3,
  maxLines: 5_000_000,
  maxLineBytes: 64 * 1024,
  idleTimeoutMs: 30_000,
  leaseMs: 120_000,
  maxUploadsPerTenant: 2,
  maxDurationMs: 3_600_000,
};

/** One core for the event loop (HTTP, commits), the others score, up to 4. */
const DEFAULT_SCORING_THREADS = Math.max(1, Math.min(4, availableParallelism() - 1));

/**
 * Reads `RUN_BATCH_SIZE` (500), `RUN_POLL_INTERVAL` (1s), `RUN_LEASE` (30s), `RUN_CONCURRENCY` (4),
 * `RUN_STORAGE_RETRIES` (5), `RUN_STORAGE_RETRY_BACKOFF` (100ms), `RUN_SCORING_THREADS` (the cores but
 * one, 1 to 4), `RUN_MAX_CLAIMS` (10), `RUN_BACKGROUND_PERCENT` (50, from 10 to 100), `RUN_MAX_PENDING_ITEMS` (10,000,000 per tenant), and an NDJSON upload's `RUN_NDJSON_MAX_BYTES` (1 GiB, up to
 * 16 GiB), `RUN_NDJSON_MAX_LINES` (5,000,000, its maximum), `RUN_NDJSON_MAX_LINE_BYTES` (64 KiB) and
 * `RUN_NDJSON_IDLE_TIMEOUT` (30s), `RUN_NDJSON_UPLOAD_LEASE` (2m) and `RUN_NDJSON_UPLOAD_TIMEOUT` (1h), `RUN_NDJSON_MAX_UPLOADS` (2 per tenant
 * and instance at once).
 */
export function readRunConfig(reader: EnvReader): RunConfig {
  return {
    batchSize: reader.integer('RUN_BATCH_SIZE', 500, 1, 1000),
    pollIntervalMs: reader.durationMs('RUN_POLL_INTERVAL', 1000, 1),
    leaseMs: reader.durationMs('RUN_LEASE', 30_000, 100),
    concurrency: reader.integer('RUN_CONCURRENCY', 4, 1, 64),
    storageRetries: reader.integer('RUN_STORAGE_RETRIES', 5, 0, 100),
    storageRetryBackoffMs: reader.durationMs('RUN_STORAGE_RETRY_BACKOFF', 100),
    scoringThreads: reader.integer('RUN_SCORING_THREADS', DEFAULT_SCORING_THREADS, 0, 64),
    maxClaims: reader.integer('RUN_MAX_CLAIMS', 10, 1, 1000),
    backgroundPercent: reader.integer('RUN_BACKGROUND_PERCENT', 50, 10, 100),
    maxPendingItems: reader.integer('RUN_MAX_PENDING_ITEMS', DEFAULT_MAX_PENDING_ITEMS, 1000, 1_000_000_000),
    upload: {
      maxBytes: reader.integer('RUN_NDJSON_MAX_BYTES', DEFAULT_UPLOAD_LIMITS.maxBytes, 1, 16 * 1024 ** 3),
      maxLines: reader.integer('RUN_NDJSON_MAX_LINES', DEFAULT_UPLOAD_LIMITS.maxLines, 1, 5_000_000),
      maxLineBytes: reader.integer(
        'RUN_NDJSON_MAX_LINE_BYTES',
        DEFAULT_UPLOAD_LIMITS.maxLineBytes,
        256,
        1024 ** 2,
      ),
      idleTimeoutMs: reader.durationMs('RUN_NDJSON_IDLE_TIMEOUT', DEFAULT_UPLOAD_LIMITS.idleTimeoutMs, 100),
      leaseMs: reader.durationMs('RUN_NDJSON_UPLOAD_LEASE', 120_000, 400),
      maxUploadsPerTenant: reader.integer('RUN_NDJSON_MAX_UPLOADS', 2, 1, 100),
      maxDurationMs: reader.durationMs('RUN_NDJSON_UPLOAD_TIMEOUT', 3_600_000, 1000),
    },
  };
}
