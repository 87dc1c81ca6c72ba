import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics/metrics.js';
import { createRunStore } from '../runs/run-store.js';
import { RunWorker } from '../runs/run-worker.js';
import type { Storage } from '../storage/storage.js';
import type { CheckpointSigner } from '../transparency-log/checkpoint-signer.js';
import { LogSequencer } from '../transparency-log/log-sequencer.js';
import { DeliveryWorker } from '../webhooks/delivery-worker.js';
import { checkedConnector } from '../webhooks/outbound-address-policy.js';
import type { SecretBox } from '../webhooks/secret-box.js';
import type { BackgroundWorker } from './background-worker.js';

/** What background workers are built from. */
export interface WorkerDependencies {
  storage: Storage;
  config: Config;
  secretBox: SecretBox;
  logger: Logger;
  clock: Clock;
  /** The instance's Prometheus instruments (e.g. `metrics.deliveryAttempts`, `metrics.deliveryLagSeconds`). */
  metrics: Metrics;
  /** Signs the checkpoints of the verifiable log. */
  logSigner: CheckpointSigner;
}

/** The background workers of an instance, started by the runtime after the storage is open. */
export function createWorkers({
  storage,
  config,
  secretBox,
  logger,
  clock,
  metrics,
  logSigner,
}: WorkerDependencies): BackgroundWorker[] {
  const { webhooks } = config;
  // Every connection is checked at connect time and pinned to the checked address (DNS rebinding).
  const connector = checkedConnector(webhooks, undefined, { timeout: webhooks.timeoutMs });
  return [
    new DeliveryWorker({
      storage,
      config: webhooks,
      secretBox,
      logger,
      clock,
      metrics,
      connect: connector,
    }),
    new RunWorker({
      store: createRunStore(storage),
      config: config.runs,
      clock,
      logger,
      runQueue: storage.runQueue,
      outbox: storage.outbox,
    }),
    new LogSequencer({ storage, signer: logSigner, config: config.transparencyLog, clock, logger }),
  ];
}
