import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import type { Storage } from '../storage/storage.js';
import { DeliveryWorker } from '../webhooks/delivery-worker.js';
import type { SecretBox } from '../webhooks/secret-box.js';
import type { BackgroundWorker } from './background-worker.js';

/** What background workers are built from. */
export interface WorkerDependencies {
  storage: Storage;
  config: Config;
  secretBox: SecretBox;
  logger: Logger;
  clock: Clock;
}

/** The background workers of an instance, started by the runtime after the storage is open. */
export function createWorkers({
  storage,
  config,
  secretBox,
  logger,
  clock,
}: WorkerDependencies): BackgroundWorker[] {
  return [
    new DeliveryWorker({
      storage,
      config: config.webhooks,
      secretBox,
      logger,
      clock,
      // TODO(merge): pass `dispatcher: createDeliveryAgent(config.webhooks.timeoutMs, { lookup: checkedLookup(config.webhooks) })`
      // (outbound-address-policy.ts), so every connection is checked and pinned against DNS rebinding.
    }),
  ];
}
