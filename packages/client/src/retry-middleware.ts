import type { Middleware, MiddlewareCallbackParams } from 'openapi-fetch';
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

/** What every hook of one call receives besides its request: the call's path, parameters, id and options. */
type CallContext = Omit<MiddlewareCallbackParams, 'request'>;

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
 *
 * `eachAttempt` is middleware run around every attempt, inside the retries (createClient's `middleware`
 * option): its `onRequest` on each attempt's request (a retry re-sends the request as the first attempt
 * sent it, through `onRequest` again), its `onResponse` on each attempt's response and its `onError` on
 * each network error, before this middleware decides whether to retry. Middleware registered after this
 * one with `client.use` runs once per call instead: its `onResponse` sees the first attempt's response only.
 */
export function retryMiddleware(
  options: RetryOptions = {},
  eachAttempt: readonly Middleware[] = [],
): Middleware {
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

  /** `eachAttempt`'s onRequest hooks, in order: the request to send, or the Response one answered with. */
  async function requestHooks(request: Request, context: CallContext): Promise<Request | Response> {
    let current = request;
    for (const m of eachAttempt) {
      const result = await m.onRequest?.({ ...context, request: current });
      if (result instanceof Response) return result;
      if (result instanceof Request) current = result;
      else if (result)
        throw new Error('onRequest: must return new Request() or Response() when modifying the request');
    }
    return current;
  }

  /** `eachAttempt`'s onResponse hooks, last first (as openapi-fetch runs them): the response they leave. */
  async function responseHooks(
    request: Request,
    response: Response,
    context: CallContext,
  ): Promise<Response> {
    let current = response;
    for (const m of [...eachAttempt].reverse()) {
      const result = await m.onResponse?.({ ...context, request, response: current });
      if (result instanceof Response) current = result;
      else if (result) throw new Error('onResponse: must return new Response() when modifying the response');
    }
    return current;
  }

  /** `eachAttempt`'s onError hooks, last first: a Response one answered with (then its onResponse hooks), or the error. */
  async function errorHooks(request: Request, error: unknown, context: CallContext): Promise<Outcome> {
    let current = error;
    for (const m of [...eachAttempt].reverse()) {
      const result = await m.onError?.({ ...context, request, error: current });
      if (result instanceof Response) return { response: await responseHooks(request, result, context) };
      if (result instanceof Error) current = result;
      else if (result) throw new Error('onError: must return new Response() or instance of Error');
    }
    return { error: current };
  }

  /** One retry: the request through `eachAttempt`'s hooks and the client's fetch. */
  async function attempt(request: Request, context: CallContext): Promise<Outcome> {
    const prepared = await requestHooks(request, context);
    if (prepared instanceof Response) return { response: prepared };
    let response: Response;
    try {
      response = await context.options.fetch(prepared);
    } catch (error) {
      return errorHooks(prepared, error, context);
    }
    return { response: await responseHooks(prepared, response, context) };
  }

  async function retryWhileAllowed(
    first: Outcome,
    request: Request,
    state: RequestState,
    context: CallContext,
  ): Promise<Outcome> {
    let outcome = first;
    for (let delay = delayAfter(outcome, request, state.retries); delay !== null; ) {
      state.retries += 1;
      // Free the connection that the unread body would otherwise hold while we wait.
      if ('response' in outcome) await outcome.response.body?.cancel().catch(() => {});
      await sleep(delay, request.signal);
      outcome = await attempt(new Request(request, { body: state.body ?? null }), context);
      delay = delayAfter(outcome, request, state.retries);
    }
    return outcome;
  }

  return {
    async onRequest({ request, ...context }) {
      const { id } = context;
      // A streamed body (an NDJSON run's upload, uploadRunNdjson) is neither buffered nor sent twice.
      if (request.headers.get('content-type')?.startsWith('application/x-ndjson')) {
        states.set(id, { body: undefined, retries: Number.POSITIVE_INFINITY, settled: false });
      } else {
        const body =
          request.body === null || maxRetries === 0 ? undefined : await request.clone().arrayBuffer();
        states.set(id, { body, retries: 0, settled: false });
      }
      if (eachAttempt.length === 0) return undefined;
      const prepared = await requestHooks(request, context);
      // openapi-fetch runs no onResponse after a Response from onRequest: nothing to retry.
      if (prepared instanceof Response) states.delete(id);
      return prepared;
    },
    async onResponse({ request, response, ...context }) {
      const { id } = context;
      const state = states.get(id) ?? { body: undefined, retries: 0, settled: false };
      if (state.settled) {
        states.delete(id);
        return undefined;
      }
      try {
        const first = { response: await responseHooks(request, response, context) };
        const outcome = await retryWhileAllowed(first, request, state, context);
        if ('error' in outcome) throw outcome.error;
        return outcome.response;
      } finally {
        states.delete(id);
      }
    },
    async onError({ request, error, ...context }) {
      const { id } = context;
      const state = states.get(id) ?? { body: undefined, retries: 0, settled: false };
      try {
        const first = await errorHooks(request, error, context);
        const outcome = await retryWhileAllowed(first, request, state, context);
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
