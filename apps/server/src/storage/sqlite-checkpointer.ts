import { Worker } from 'node:worker_threads';

/**
 * How often the checkpointer copies committed WAL frames into the database file. A checkpoint copies the
 * latest frame of each page changed since the last one and flushes the file, so the pages every commit
 * rewrites (the right edges of the log's tables, the b-trees' upper levels, the header) are copied once
 * per interval, not once per commit: at 50 ms it cost about 4 µs of CPU per logged record, at 250 ms
 * about 1. At a few thousand scorings a second the WAL then holds a few MB between checkpoints, far
 * below the writer's own fallback (FALLBACK_AUTOCHECKPOINT_PAGES).
 */
const CHECKPOINT_INTERVAL_MS = 250;

/**
 * The checkpointer thread, as source evaluated by the Worker: small and dependency-free, so the built
 * server and the TypeScript tests run the same code without a separate built script. It opens its own
 * connection and runs PASSIVE checkpoints, which never take the write lock: writers are not blocked, and
 * frames still needed by a reader are left for a later round.
 */
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { DatabaseSync } = require('node:sqlite');
const database = new DatabaseSync(workerData.file);
database.exec('PRAGMA busy_timeout = 5000');
const checkpoint = database.prepare('PRAGMA wal_checkpoint(PASSIVE)');
const timer = setInterval(() => {
  try {
    checkpoint.all();
  } catch {
    // Busy or failing now: the next round tries again, and the writer's own autocheckpoint bounds the WAL.
  }
}, workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  database.close();
  parentPort.close();
});
`;

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
    this.#thread = new Worker(THREAD_SOURCE, {
      eval: true,
      workerData: { file, intervalMs: CHECKPOINT_INTERVAL_MS },
    });
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
