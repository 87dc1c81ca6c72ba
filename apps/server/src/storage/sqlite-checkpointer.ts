import { Worker } from 'node:worker_threads';
import { THREAD_RESOURCE_LIMITS, threadModule } from '../server-files.js';
import type { CheckpointThreadData } from './sqlite-thread-messages.js';

/**
 * How often the checkpointer copies committed WAL frames into the database file. A checkpoint copies the
 * latest frame of each page changed since the last one and flushes the file, so the pages every commit
 * rewrites (the right edges of the log's tables, the b-trees' upper levels, the header) are copied once
 * per interval, not once per commit: a longer interval costs less CPU per logged record
 * (docs/benchmarks.md). At a few thousand scorings a second the WAL then holds a few MB between
 * checkpoints, far below the writer's own fallback (FALLBACK_AUTOCHECKPOINT_PAGES).
 */
const CHECKPOINT_INTERVAL_MS = 250;

/** The checkpointer's thread (see sqlite-checkpoint-thread.ts). */
const THREAD_MODULE = threadModule('storage/sqlite-checkpoint-thread');

/**
 * Checkpoints a WAL-mode SQLite file from a worker thread. `node:sqlite` is synchronous, so a checkpoint
 * run by the committing connection (SQLite's automatic one, every 1000 WAL pages) blocks the event loop
 * while it copies pages and flushes the database file; with randomly keyed indexes that is about a third
 * of a batch commit's time. Durability does not depend on it: a commit is durable once its WAL frames are
 * flushed, which the committing connection still does (synchronous=FULL).
 */
export class SqliteCheckpointer {
  readonly #thread: Worker;
  readonly #exited: Promise<void>;

  /** Starts checkpointing `file` every CHECKPOINT_INTERVAL_MS. */
  constructor(file: string) {
    const workerData: CheckpointThreadData = { file, intervalMs: CHECKPOINT_INTERVAL_MS };
    this.#thread = new Worker(THREAD_MODULE, { workerData, resourceLimits: THREAD_RESOURCE_LIMITS });
    // Not `events.once`: it rejects on 'error', and a rejection nobody awaits until close() would end the
    // process. A failed thread only means the writer's fallback autocheckpoint takes over.
    this.#exited = new Promise((resolve) => this.#thread.once('exit', () => resolve()));
    this.#thread.on('error', () => {});
    // It must not keep the process alive after the server stopped.
    this.#thread.unref();
  }

  /** Stops the thread once its current checkpoint is done, closing its connection. */
  async close(): Promise<void> {
    // Keep the process alive until the thread has closed its connection.
    this.#thread.ref();
    this.#thread.postMessage('stop');
    await this.#exited;
  }
}
