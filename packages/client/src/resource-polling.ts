import { type CallResult, resultOf } from './call-result.js';
import type { Problem } from './problem-guard.js';
import { backoffMs, retryAfterMs } from './retry-delay.js';

/** How a `waitFor…` helper polls. Every field has a default. */
export interface PollOptions {
  /** Stops waiting: the returned promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /** The first wait between polls, in ms; it doubles after each poll. Default 250. */
  initialDelayMs?: number;
  /** The longest wait between polls, in ms (a longer `Retry-After` is still honoured). Default 5000. */
  maxDelayMs?: number;
  /** Waits `ms`, or rejects when `signal` aborts. Injected by tests; defaults to a timer. */
  sleep?: (ms: number, signal: AbortSignal | undefined) => Promise<void>;
  /** The current time in ms since the epoch, for `Retry-After` dates. Default `Date.now`. */
  now?: () => number;
  /** A number in [0, 1) for jitter. Default `Math.random`. */
  random?: () => number;
}

/** A call's outcome as openapi-fetch answers it. */
type Fetched<T> = { data?: T; error?: Problem | undefined; response: Response };

/** Statuses that say "come back later" rather than "this will not work". */
const TRY_AGAIN = new Set([429, 503]);

function abortableSleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Calls `fetchOnce` until its data is `done`, and answers that data; waits grow from `initialDelayMs` to
 * `maxDelayMs` with jitter, and after a 429 or 503 last what `Retry-After` asks. Any other error is answered
 * as `error` at once. Aborting `signal` rejects with its reason, like `fetch`.
 */
export async function pollUntil<T>(
  fetchOnce: (signal: AbortSignal | undefined) => Promise<Fetched<T>>,
  done: (data: T) => boolean,
  options: PollOptions = {},
): Promise<CallResult<T>> {
  const { signal } = options;
  const initialDelayMs = options.initialDelayMs ?? 250;
  const maxDelayMs = options.maxDelayMs ?? 5000;
  const sleep = options.sleep ?? abortableSleep;
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  for (let poll = 0; ; poll++) {
    signal?.throwIfAborted();
    const { data, error, response } = await fetchOnce(signal);
    if (data !== undefined && done(data)) return { data, response };
    if (data === undefined && !TRY_AGAIN.has(response.status)) return resultOf(data, error, response);
    const asked = retryAfterMs(response.headers.get('Retry-After'), now());
    await sleep(asked ?? backoffMs(poll, initialDelayMs * 2, maxDelayMs, random()), signal);
  }
}
