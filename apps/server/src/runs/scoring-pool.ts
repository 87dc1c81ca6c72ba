import { Worker } from 'node:worker_threads';
import { type BatchSource, type ScoredBatch, scoreBatch } from './run-batch.js';

/** A batch to score, as sent to a scoring thread. */
export interface ScoringRequest {
  id: number;
  source: BatchSource;
  from: number;
  to: number;
  /** Epoch milliseconds: the time the batch is scored and logged at. */
  now: number;
}

type ScoringReply = { id: number; batch: ScoredBatch } | { id: number; error: string };

interface Pending {
  resolve: (batch: ScoredBatch) => void;
  reject: (error: Error) => void;
}

/** The built scoring thread; under vitest (TypeScript sources) there is none, and scoring stays in process. */
const THREAD_SCRIPT = new URL('./scoring-thread.js', import.meta.url);

/**
 * Scores run batches on worker threads, so that the event loop keeps committing batches and answering
 * requests while the next batches are scored: one run pipelines its scoring with its commits, and
 * concurrent runs score in parallel. With 0 threads (or no built thread script) it scores in process.
 */
export class ScoringPool {
  readonly #threads: Worker[] = [];
  readonly #pending = new Map<number, Pending>();
  #nextId = 0;
  #turn = 0;

  constructor(threads: number, script: URL = THREAD_SCRIPT) {
    if (threads > 0 && !script.pathname.endsWith('.js')) threads = 0;
    for (let i = 0; i < threads; i++) {
      const thread = new Worker(script);
      thread.on('message', (reply: ScoringReply) => this.#settle(reply));
      thread.on('error', (error) => this.#failAll(error));
      // Idle threads must not keep the process alive after the server stopped.
      thread.unref();
      this.#threads.push(thread);
    }
  }

  /** The number of scoring threads (0: in process). */
  get size(): number {
    return this.#threads.length;
  }

  /** Scores items `from`..`to` of a run (see `scoreBatch`), on the next thread in turn. */
  score(source: BatchSource, from: number, to: number, now: Date): Promise<ScoredBatch> {
    if (this.#threads.length === 0) {
      try {
        return Promise.resolve(scoreBatch(source, from, to, now));
      } catch (error) {
        return Promise.reject(error);
      }
    }
    const thread = this.#threads[this.#turn++ % this.#threads.length] as Worker;
    const id = this.#nextId++;
    // Only the batch's items cross the thread boundary, not the whole run.
    const offset = source.offset ?? 0;
    const slice: BatchSource = {
      ...source,
      items: source.items.slice(from - offset, to - offset),
      offset: from,
    };
    const request: ScoringRequest = { id, source: slice, from, to, now: now.getTime() };
    return new Promise<ScoredBatch>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      thread.postMessage(request);
    });
  }

  /** Ends the threads; batches still being scored are rejected. */
  async close(): Promise<void> {
    await Promise.all(this.#threads.map((thread) => thread.terminate()));
    this.#failAll(new Error('the scoring pool is closed'));
  }

  #settle(reply: ScoringReply): void {
    const pending = this.#pending.get(reply.id);
    if (!pending) return;
    this.#pending.delete(reply.id);
    if ('error' in reply) pending.reject(new Error(reply.error));
    else pending.resolve(reply.batch);
  }

  #failAll(error: Error): void {
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
  }
}
