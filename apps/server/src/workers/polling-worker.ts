import { setTimeout as sleep } from 'node:timers/promises';
import type { BackgroundWorker } from './background-worker.js';

/**
 * The loop of a background worker that polls: a round, then a wait of `intervalMs` that `wake()` or
 * `stop()` cuts short, until stopped. A round that answers `true` (it left work for the next) is followed
 * by the next at once (after one turn of the event loop). A round that throws is handed to `roundFailed`
 * and the loop goes on. `stop()` waits for the round in flight; `stopping` tells a long round to cut itself
 * short.
 */
export abstract class PollingWorker implements BackgroundWorker {
  abstract readonly name: string;
  #running = false;
  readonly #stopping = new AbortController();
  #wake = new AbortController();
  #loop: Promise<void> | undefined;

  get running(): boolean {
    return this.#running;
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#loop = this.#run();
  }

  async stop(): Promise<void> {
    this.#running = false;
    this.#stopping.abort();
    this.#wake.abort();
    await this.#loop;
  }

  /** Cuts the current wait short: the next round starts at once. */
  protected wake(): void {
    this.#wake.abort();
  }

  /** Aborted once `stop()` was called. */
  protected get stopping(): AbortSignal {
    return this.#stopping.signal;
  }

  /** How long to wait between rounds. */
  protected abstract get intervalMs(): number;

  /** One round of work; `true` when it left work for another round at once. */
  protected abstract round(): Promise<boolean>;

  /** A round threw: log it (the loop goes on). */
  protected abstract roundFailed(error: unknown): void;

  async #run(): Promise<void> {
    while (this.#running) {
      this.#wake = new AbortController();
      let again = false;
      try {
        again = await this.round();
      } catch (error) {
        this.roundFailed(error);
      }
      if (again && this.#running) {
        await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      try {
        await sleep(this.intervalMs, undefined, {
          signal: AbortSignal.any([this.#stopping.signal, this.#wake.signal]),
        });
      } catch {
        // Woken, or stopped.
      }
    }
  }
}
