import type { NoteSigner } from '@scenario-scoring/tlog';
import type { Clock } from './common/clock.js';
import { ErasureWorker } from './erasure/erasure-worker.js';
import type { Features } from './features.js';
import { IdempotencyPurge } from './idempotency/idempotency-purge.js';
import type { Metrics } from './metrics/metrics.js';
import type { Logger } from './request-logging/logger.js';
import { RunLogCompletion } from './runs/run-log-completion.js';
import { createRunStore } from './runs/run-store.js';
import { RunWorker } from './runs/run-worker.js';
import type { Config } from './server-config.js';
import { LogSequencer } from './verifiable-log/log-sequencer.js';
import { RootLog } from './verifiable-log/root-log.js';
import { DeliveryWorker } from './webhooks/delivery/delivery-worker.js';
import { checkedConnector } from './webhooks/outbound/outbound-address-policy.js';
import type { SecretBox } from './webhooks/outbound/secret-box.js';
import type { BackgroundWorker } from './workers/background-worker.js';

/** What background workers are built from. */
export interface WorkerDependencies {
  /** The storage and the signals that wake the workers (see features.ts). */
  features: Features;
  config: Config;
  secretBox: SecretBox;
  logger: Logger;
  clock: Clock;
  /** The instance's Prometheus instruments (e.g. `metrics.deliveryAttempts`, `metrics.deliveryLagSeconds`). */
  metrics: Metrics;
  /** Signs the checkpoints of the verifiable log. */
  logSigner: NoteSigner;
}

/** The background workers of an instance, started by the runtime after the storage is open. */
export function createWorkers({
  features,
  config,
  secretBox,
  logger,
  clock,
  metrics,
  logSigner,
}: WorkerDependencies): BackgroundWorker[] {
  const { webhooks } = config;
  const { storage } = features;
  // Every connection is checked at connect time and pinned to the checked address (DNS rebinding).
  const connector = checkedConnector(webhooks, undefined, { timeout: webhooks.timeoutMs });
  // run.completed waits for its items' records to be signed: woken by this instance's sequencer.
  const runLogCompletion = new RunLogCompletion({
    db: storage.db,
    outbox: features.outbox,
    clock,
    logger,
    pollIntervalMs: config.runs.pollIntervalMs,
  });
  return [
    new DeliveryWorker({
      storage,
      outbox: features.outbox,
      retired: features.retiredWebhooks,
      config: webhooks,
      secretBox,
      logger,
      clock,
      metrics,
      connect: connector,
      pacer: features.backgroundPacer,
    }),
    new RunWorker({
      store: createRunStore(storage, { subjectKey: features.subjectKey, outbox: features.outbox }),
      config: config.runs,
      clock,
      logger,
      runQueue: features.runQueue,
      outbox: features.outbox,
      pacer: features.backgroundPacer,
    }),
    new LogSequencer({
      storage,
      signer: logSigner,
      config: config.verifiableLog,
      clock,
      logger,
      checkpoints: {
        notify(tenantId) {
          features.logCheckpoints.notify(tenantId);
          runLogCompletion.logSigned();
        },
      },
      selfCheckFailures: metrics.logSelfCheckFailures,
    }),
    new RootLog({
      storage,
      signer: logSigner,
      config: config.verifiableLog,
      policyText: config.verifiableLog.witnessPolicy?.text,
      clock,
      logger,
      selfCheckFailures: metrics.logSelfCheckFailures,
    }),
    runLogCompletion,
    new IdempotencyPurge({ db: storage.db, clock, logger }),
    new ErasureWorker({
      storage,
      config: config.erasure,
      subjectKey: features.subjectKey,
      erasureQueue: features.erasureQueue,
      outbox: features.outbox,
      clock,
      logger,
    }),
  ];
}
