import { describe, expect, it } from 'vitest';
import { EnvReader } from '../config/env-reader.js';
import { loadConfig } from '../server-config.js';
import { readRunConfig } from './run-config.js';

describe('the run configuration', () => {
  it('reads every RUN_ variable, durations with units', () => {
    const reader = new EnvReader({
      RUN_BATCH_SIZE: '50',
      RUN_POLL_INTERVAL: '250ms',
      RUN_LEASE: '2m',
      RUN_CONCURRENCY: '8',
      RUN_STORAGE_RETRIES: '0',
      RUN_STORAGE_RETRY_BACKOFF: '1s',
      RUN_SCORING_THREADS: '0',
      RUN_MAX_CLAIMS: '3',
      RUN_NDJSON_MAX_BYTES: '1048576',
      RUN_NDJSON_MAX_LINES: '1000',
      RUN_NDJSON_MAX_LINE_BYTES: '4096',
      RUN_NDJSON_IDLE_TIMEOUT: '5s',
      RUN_NDJSON_MAX_UPLOADS: '1',
      RUN_BACKGROUND_PERCENT: '25',
      RUN_MAX_PENDING_ITEMS: '50000',
    });
    expect(readRunConfig(reader)).toEqual({
      batchSize: 50,
      pollIntervalMs: 250,
      leaseMs: 120_000,
      concurrency: 8,
      storageRetries: 0,
      storageRetryBackoffMs: 1000,
      scoringThreads: 0,
      maxClaims: 3,
      backgroundPercent: 25,
      maxPendingItems: 50_000,
      upload: {
        maxBytes: 1_048_576,
        maxLines: 1000,
        maxLineBytes: 4096,
        idleTimeoutMs: 5000,
        leaseMs: 120_000,
        maxUploadsPerTenant: 1,
        maxDurationMs: 3_600_000,
      },
    });
    expect(reader.problems).toEqual([]);
  });

  it('names every bad RUN_ variable at start', () => {
    expect(() => loadConfig({ RUN_BATCH_SIZE: '1001', RUN_LEASE: 'soon', RUN_CONCURRENCY: '0' })).toThrow(
      /RUN_BATCH_SIZE must be an integer from 1 to 1000[\s\S]*RUN_LEASE must be a duration[\s\S]*RUN_CONCURRENCY must be/,
    );
  });
});
