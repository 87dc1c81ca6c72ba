import type { RunCompletedEvent, RunFailedEvent, WebhookEvent } from './api-types.js';

/** The event that ends a run: `run.completed` or `run.failed`. */
export type RunEndEvent = RunCompletedEvent | RunFailedEvent;

/** Tells whether an event ends a run (any run, or the run `runId`). */
export function isRunEndEvent(event: WebhookEvent, runId?: string): event is RunEndEvent {
  if (event.type !== 'run.completed' && event.type !== 'run.failed') return false;
  return runId === undefined || event.data.run_id === runId;
}

/** How many ended runs a waiter remembers for callers that have not asked yet. */
const DEFAULT_REMEMBERED = 10_000;

/**
 * Matches webhook events to the runs you wait for: hand it every verified event, and await the end of a
 * run by its id. An event that arrives before `wait` is called is remembered (the most recent
 * `remembered` runs), so the order of submitting, waiting and receiving does not matter. Deliveries are
 * at least once; a repeated event changes nothing.
 *
 * ```ts
 * const runs = new RunEndWaiter();
 * app.post('/hooks', express.raw({ type: 'application/json' }), (req, res) => {
 *   runs.deliver(verifyWebhook(req.body, req.headers, secret));
 *   res.sendStatus(204);
 * });
 * const ended = await runs.wait(run.id, { signal: AbortSignal.timeout(600_000) });
 * ```
 */
export class RunEndWaiter {
  readonly #ended = new Map<string, RunEndEvent>();
  readonly #waiting = new Map<string, Set<(event: RunEndEvent) => void>>();
  readonly #remembered: number;

  constructor(options: { remembered?: number } = {}) {
    this.#remembered = options.remembered ?? DEFAULT_REMEMBERED;
  }

  /** Takes a verified event; true when it ended a run. Other events are ignored. */
  deliver(event: WebhookEvent): boolean {
    if (!isRunEndEvent(event)) return false;
    const runId = event.data.run_id;
    const waiters = this.#waiting.get(runId);
    this.#waiting.delete(runId);
    for (const resolve of waiters ?? []) resolve(event);
    this.#ended.delete(runId);
    this.#ended.set(runId, event);
    // Maps iterate in insertion order: the first key is the oldest.
    if (this.#ended.size > this.#remembered) this.#ended.delete(this.#ended.keys().next().value as string);
    return true;
  }

  /** Resolves with the event that ended the run; rejects with the signal's reason when it aborts first. */
  wait(runId: string, options: { signal?: AbortSignal } = {}): Promise<RunEndEvent> {
    const { signal } = options;
    const known = this.#ended.get(runId);
    if (known) return Promise.resolve(known);
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const waiters = this.#waiting.get(runId) ?? new Set();
      this.#waiting.set(runId, waiters);
      const onAbort = () => {
        waiters.delete(settle);
        if (waiters.size === 0) this.#waiting.delete(runId);
        reject(signal?.reason);
      };
      const settle = (event: RunEndEvent) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(event);
      };
      waiters.add(settle);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
