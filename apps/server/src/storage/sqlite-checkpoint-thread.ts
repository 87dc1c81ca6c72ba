import { DatabaseSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';
import type { CheckpointThreadData } from './sqlite-thread-messages.js';

/**
 * The checkpointer's thread (see SqliteCheckpointer): opens its own connection and runs PASSIVE
 * checkpoints every `intervalMs`, which never take the write lock: writers are not blocked, and frames
 * still needed by a reader are left for a later round. Any message stops it once its current checkpoint is
 * done, closing its connection. It imports only Node's modules and types, so that Node runs this
 * TypeScript source as it is under vitest (see server-files.ts).
 */
const { file, intervalMs } = workerData as CheckpointThreadData;
const database = new DatabaseSync(file);
database.exec('PRAGMA busy_timeout = 5000');
const checkpoint = database.prepare('PRAGMA wal_checkpoint(PASSIVE)');
const timer = setInterval(() => {
  try {
    checkpoint.all();
  } catch {
    // Busy or failing now: the next round tries again, and the writer's own autocheckpoint bounds the WAL.
  }
}, intervalMs);
parentPort?.on('message', () => {
  clearInterval(timer);
  database.close();
  parentPort?.close();
});
