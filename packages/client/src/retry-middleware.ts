import type { Middleware } from 'openapi-fetch';
import { backoffMs, retryAfterMs } from './retry-delay.js';

/** When and how long to retry. Every field has a default. */
export interface RetryOptions {
  /** Retries after the first attempt; 0 turns retrying off. Default 3. */
  maxRetries?: number;
  /** The first backoff, in ms; it doubles on each retry. Default 500. */
  baseDelayMs?: number;
  /**
   * The longest single wait, in ms. Backoff is capped at it; a `Retry-After` longer than it is not waited
   * for: the response is returned as it is, and its `error` says when to come back. Default 60 000.
   */
  maxDelayMs?: number;
  /** The statuses that are retried, for every method (the server did not act on them). Default [429, 503]. */
  retryOn?: readonly number[];
  /** Waits `ms`, or rejects when `signal` aborts. Injected by tests; defaults to a timer. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** The current time in ms since the epoch, for `Retry-After` dates. Default `Date.now`. */
  now?: () => number;
  /** A number in [0, 1) for jitter. Default `Math.random`. */
  random?: () => number;
}

/** The defaults of {@link RetryOptions}. */
export const DEFAULT_RETRY = {
  maxRetries: 3,
  baseDelayMs: 500,
  maxDelayMs: 60_000,
  retryOn: [429, 503],
} as const satisfies RetryOptions;

/** Methods that may be sent again after a network error: the server acting twice changes nothing. */
const IDEMPOTENT_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE']);

/** What one attempt gave: a response, or the error that fetch threw. */
type Outcome = { response: Response } | { error: unknown };

/** What the middleware keeps about one request between its hooks. */
interface RequestState {
  /** The body, read in onRequest, because fetch consumes the request's own. */
  body: ArrayBuffer | undefined;
  retries: number;
  /** Set when onError answered with a response, which onResponse then must leave alone. */
  settled: boolean;
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Middleware that retries a request answered with a status of `retryOn` (429 and 503 by default),
 * waiting what `Retry-After` asks (seconds or an HTTP-date) or else exponential backoff with jitter. A
 * network error (fetch's TypeError) is retried only when sending twice is safe: for idempotent methods, and for a POST or
 * PATCH that carries an `Idempotency-Key`. After the last retry the last response is returned (its problem
 * is the call's `error`), or the last network error is thrown. Register it last, so that it sees the
 * request with every header the other middleware set and re-sends exactly that.
 */
export function retryMiddleware(options: RetryOptions = {}): Middleware {
  const maxRetries = options.maxRetries ?? DEFAULT_RETRY.maxRetries;
  const baseDelayMs = options.baseDelayMs ?? DEFAULT_RETRY.baseDelayMs;
  const maxDelayMs = options.maxDelayMs ?? DEFAULT_RETRY.maxDelayMs;
  const retryOn = new Set(options.retryOn ?? DEFAULT_RETRY.retryOn);
  const sleep = options.sleep ?? abortableSleep;
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  // Keyed by openapi-fetch's per-request id, which every hook of one request receives.
  const states = new Map<string, RequestState>();

  /** The wait before retrying after `outcome`, or null when it must not be retried. */
  function delayAfter(outcome: Outcome, request: Request, retries: number): number | null {
    if (retries >= maxRetries || request.signal.aborted) return null;
    if ('response' in outcome) {
      if (!retryOn.has(outcome.response.status)) return null;
      const asked = retryAfterMs(outcome.response.headers.get('Retry-After'), now());
      if (asked === null) return backoffMs(retries, baseDelayMs, maxDelayMs, random());
      return asked <= maxDelayMs ? asked : null;
    }
    // fetch reports a network failure as a TypeError; anything else thrown is not ours to retry.
    if (!(outcome.error instanceof TypeError)) return null;
    const safe = IDEMPOTENT_METHODS.has(request.method) || request.headers.has('Idempotency-Key');
    return safe ? backoffMs(retries, baseDelayMs, maxDelayMs, random()) : null;
  }

  async function retryWhileAllowed(
    first: Outcome,
    request: Request,
    state: RequestState,
    fetch: typeof globalThis.fetch,
  ): Promise<Outcome> {
    let outcome = first;
    for (let delay = delayAfter(outcome, request, state.retries); delay !== null; ) {
      state.retries += 1;
      // Free the connection that the unread body would otherwise hold while we wait.
      if ('response' in outcome) await outcome.response.body?.cancel().catch(() => {});
      await sleep(delay, request.signal);
      try {
        outcome = { response: await fetch(new Request(request, { body: state.body ?? null })) };
      } catch (error) {
        outcome = { error };
      }
      delay = delayAfter(outcome, request, state.retries);
    }
    return outcome;
  }

  return {
    async onRequest({ request, id }) {
      // A streamed body (an NDJSON run's upload, uploadRunNdjson) is neither buffered nor sent twice.
      if (request.headers.get('content-type')?.startsWith('application/x-ndjson')) {
        states.set(id, { body: undefined, retries: Number.POSITIVE_INFINITY, settled: false });
        return undefined;
      }
      const body =
        request.body === null || maxRetries === 0 ? undefined : await request.clone().arrayBuffer();
      states.set(id, { body, retries: 0, settled: false });
      return undefined;
    },
    async onResponse({ request, response, id, options: { fetch } }) {
      const state = states.get(id) ?? { body: undefined, retries: 0, settled: false };
      if (state.settled) {
        states.delete(id);
        return undefined;
      }
      try {
        const outcome = await retryWhileAllowed({ response }, request, state, fetch);
        if ('error' in outcome) throw outcome.error;
        return outcome.response;
      } finally {
        states.delete(id);
      }
    },
    async onError({ request, error, id, options: { fetch } }) {
      const state = states.get(id) ?? { body: undefined, retries: 0, settled: false };
      try {
        const outcome = await retryWhileAllowed({ error }, request, state, fetch);
        if ('error' in outcome) return outcome.error instanceof Error ? outcome.error : undefined;
        // openapi-fetch now runs onResponse on this response; the state tells it the retrying is done.
        state.settled = true;
        return outcome.response;
      } finally {
        if (state.settled) states.set(id, state);
        else states.delete(id);
      }
    },
  };
}
