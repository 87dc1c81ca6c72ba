import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { SERVER_FILES, THREAD_RESOURCE_LIMITS } from '../server-files.js';
import { type BatchSource, batchRows, type ScoredBatch, type ScoredItems, scoreBatch } from './run-batch.js';

/** A batch to score, as sent to a scoring thread. */
export interface ScoringRequest {
  id: number;
  source: BatchSource;
  from: number;
  /** Epoch milliseconds: the time the batch is scored and logged at. */
  now: number;
}

/** A scoring thread's answer: the batch scored (see `scoreItems`), or why it could not be. */
export type ScoringReply = { id: number; scored: ScoredItems } | { id: number; error: string };

interface Pending {
  /** The thread scoring it: when that thread dies, the batch is rejected. */
  thread: Worker;
  /** The batch's rows, made on the event loop from what the thread answered. */
  resolve: (scored: ScoredItems) => void;
  reject: (error: Error) => void;
}

/**
 * The built scoring thread (tsc's output, also beside the production bundle: see server-files.ts); under
 * vitest (TypeScript sources) there is none, and scoring stays in process.
 */
const THREAD_SCRIPT = new URL('runs/scoring-thread.js', SERVER_FILES);

/**
 * Scores run batches on worker threads, so that the event loop keeps committing batches and answering
 * requests while the next batches are scored: one run pipelines its scoring with its commits, and
 * concurrent runs score in parallel. With 0 threads (or no built thread script) it scores in process.
 * A thread that dies leaves the rotation, failing only the batches it held; with none left, the pool
 * scores in process.
 */
export class ScoringPool {
  readonly #threads: Worker[] = [];
  readonly #pending = new Map<number, Pending>();
  #nextId = 0;
  #turn = 0;

  constructor(threads: number, script: URL = THREAD_SCRIPT) {
    if (!existsSync(fileURLToPath(script))) threads = 0;
    for (let i = 0; i < threads; i++) this.#startThread(script);
  }

  /** The number of scoring threads (0: in process). */
  get size(): number {
    return this.#threads.length;
  }

  /** Scores a batch whose first item is the run's item `from` (see `scoreBatch`), on the next thread in turn. */
  score(source: BatchSource, from: number, now: Date): Promise<ScoredBatch> {
    if (this.#threads.length === 0) {
      try {
        return Promise.resolve(scoreBatch(source, from, now));
      } catch (error) {
        return Promise.reject(error);
      }
    }
    const thread = this.#threads[this.#turn++ % this.#threads.length] as Worker;
    const id = this.#nextId++;
    const request: ScoringRequest = { id, source, from, now: now.getTime() };
    return new Promise<ScoredBatch>((resolve, reject) => {
      // In a thread's 'message' event a throw would end the process: a bad answer fails its batch only.
      const rows = (scored: ScoredItems) => {
        try {
          resolve(batchRows(source, from, now, scored));
        } catch (error) {
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      };
      this.#pending.set(id, { thread, resolve: rows, reject });
      thread.postMessage(request);
    });
  }

  /** Ends the threads; batches still being scored are rejected. */
  async close(): Promise<void> {
    this.#fail(new Error('the scoring pool is closed'));
    await Promise.all(this.#threads.map((thread) => thread.terminate()));
  }

  #startThread(script: URL): void {
    const thread = new Worker(script, { resourceLimits: THREAD_RESOURCE_LIMITS });
    let failure: Error | undefined;
    thread.on('message', (reply: ScoringReply) => this.#settle(reply));
    thread.on('error', (error) => (failure = error));
    // An exited thread ignores what it is sent: take it out, or the batches given to it would never settle.
    thread.on('exit', (code) => {
      this.#threads.splice(this.#threads.indexOf(thread), 1);
      this.#fail(failure ?? new Error(`a scoring thread exited with code ${code}`), thread);
    });
    // Idle threads must not keep the process alive after the server stopped.
    thread.unref();
    this.#threads.push(thread);
  }

  #settle(reply: ScoringReply): void {
    const pending = this.#pending.get(reply.id);
    if (!pending) return;
    this.#pending.delete(reply.id);
    if ('error' in reply) pending.reject(new Error(reply.error));
    else pending.resolve(reply.scored);
  }

  /** Rejects the batches held by `thread`, or all of them. */
  #fail(error: Error, thread?: Worker): void {
    for (const [id, pending] of this.#pending) {
      if (thread && pending.thread !== thread) continue;
      this.#pending.delete(id);
      pending.reject(error);
    }
  }
}
