import { type Clock, systemClock } from '../../src/common/clock.js';
import type { ErasureConfig } from '../../src/erasure/erasure-config.js';
import { ErasureWorker, type ErasureWorkerOptions } from '../../src/erasure/erasure-worker.js';
import { OutboxSignal } from '../../src/events/event-outbox.js';
import { silentLogger } from '../../src/request-logging/logger.js';
import type { Storage } from '../../src/storage/storage.js';
import { testFeatures } from './test-features.js';

/**
 * An erasure worker for tests, run by hand (`runOnce`): no retention, batches of 500, no settling wait, no
 * compaction interval, the test features' subject key and outbox; `config` and the rest override.
 */
export function testErasureWorker(
  storage: Storage,
  options: Partial<Omit<ErasureWorkerOptions, 'config'>> & {
    config?: Partial<ErasureConfig>;
    clock?: Clock;
  } = {},
): ErasureWorker {
  const { config, ...rest } = options;
  return new ErasureWorker({
    storage,
    subjectKey: testFeatures(storage).subjectKey,
    erasureQueue: new OutboxSignal(),
    outbox: testFeatures(storage).outbox,
    clock: systemClock,
    logger: silentLogger,
    ...rest,
    config: {
      retention: undefined,
      pollIntervalMs: 1000,
      retentionCheckIntervalMs: 1000,
      batchSize: 500,
      leaseMs: 60_000,
      settleMs: 0,
      // Compacted after every round (and after every erasure within one).
      compactIntervalMs: 0,
      maxPendingPerTenant: 100,
      ...config,
    },
  });
}
