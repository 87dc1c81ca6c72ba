import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import { createRunStore } from '../runs/run-store.js';
import { RunWorker } from '../runs/run-worker.js';
import type { Storage } from '../storage/storage.js';
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
export function createWorkers(dependencies: WorkerDependencies): BackgroundWorker[] {
  const { storage, config, logger, clock } = dependencies;
  return [
    new RunWorker({
      store: createRunStore(storage),
      config: config.runs,
      clock,
      logger,
      runQueue: storage.runQueue,
      outbox: storage.outbox,
    }),
  ];
}
