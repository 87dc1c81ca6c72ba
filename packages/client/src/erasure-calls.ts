import type { Client } from 'openapi-fetch';
import type { Erasure, paths, SubjectRecord } from './api-types.js';
import type { Problem } from './problem-guard.js';
import { backoffMs, retryAfterMs } from './retry-delay.js';

/** A result of the erasure helpers: data, or the problem the server answered with (never both). */
export type ErasureCallResult<T> =
  | { data: T; error?: never; response: Response }
  | { data?: never; error: Problem | undefined; response: Response };

/**
 * Erases everything the tenant holds about `subject`: `POST /v1/erasures`, with an `Idempotency-Key` when
 * given (so a retry after a network error asks once). Answers the accepted erasure (`pending`); it completes
 * in the background: {@link waitForErasure}. The subject travels in the body, never in the URL.
 */
export async function eraseSubject(
  client: Client<paths>,
  subject: string,
  options: { idempotencyKey?: string; signal?: AbortSignal } = {},
): Promise<ErasureCallResult<Erasure>> {
  const { data, error, response } = await client.POST('/v1/erasures', {
    body: { subject },
    ...(options.idempotencyKey !== undefined && { headers: { 'Idempotency-Key': options.idempotencyKey } }),
    ...(options.signal && { signal: options.signal }),
  });
  return data ? { data, response } : { error, response };
}

/** `GET /v1/erasures/{id}`: the erasure's status, counts and, once completed, the CIDs it erased. */
export async function getErasure(
  client: Client<paths>,
  erasureId: string,
  options: { signal?: AbortSignal } = {},
): Promise<ErasureCallResult<Erasure>> {
  const { data, error, response } = await client.GET('/v1/erasures/{id}', {
    params: { path: { id: erasureId } },
    ...(options.signal && { signal: options.signal }),
  });
  return data ? { data, response } : { error, response };
}

/** How {@link waitForErasure} polls. Every field has a default. */
export interface WaitForErasureOptions {
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
 * Polls `GET /v1/erasures/{id}` until the erasure is `completed` and answers it (with its counts and the
 * erased CIDs). Waits grow from `initialDelayMs` to `maxDelayMs` with jitter; after a 429 or 503 it waits
 * what `Retry-After` asks. Any other error (such as 404 for an unknown erasure, or another tenant's) is
 * answered as `error`. Aborting `signal` rejects with its reason.
 */
export async function waitForErasure(
  client: Client<paths>,
  erasureId: string,
  options: WaitForErasureOptions = {},
): Promise<ErasureCallResult<Erasure>> {
  const { signal } = options;
  const initialDelayMs = options.initialDelayMs ?? 250;
  const maxDelayMs = options.maxDelayMs ?? 5000;
  const sleep = options.sleep ?? abortableSleep;
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  for (let poll = 0; ; poll++) {
    signal?.throwIfAborted();
    const { data, error, response } = await client.GET('/v1/erasures/{id}', {
      params: { path: { id: erasureId } },
      ...(signal && { signal }),
    });
    if (data?.status === 'completed') return { data, response };
    if (!data && !TRY_AGAIN.has(response.status)) return { error, response };
    const asked = retryAfterMs(response.headers.get('Retry-After'), now());
    await sleep(asked ?? backoffMs(poll, initialDelayMs * 2, maxDelayMs, random()), signal);
  }
}

/**
 * Lists every record the tenant holds of `subject` (`log_cid`, `kind`, `scored_at`), for an access request:
 * `POST /v1/subjects/records` page by page (`limit` a page, default 100), following `next_cursor`. The
 * subject travels in the body. Answers the first failing page's problem as `error`.
 */
export async function listSubjectRecords(
  client: Client<paths>,
  subject: string,
  options: { limit?: number; signal?: AbortSignal } = {},
): Promise<ErasureCallResult<SubjectRecord[]>> {
  const records: SubjectRecord[] = [];
  let cursor: string | undefined;
  for (;;) {
    const { data, error, response } = await client.POST('/v1/subjects/records', {
      body: { subject, limit: options.limit ?? 100, ...(cursor && { cursor }) },
      ...(options.signal && { signal: options.signal }),
    });
    if (!data) return { error, response };
    records.push(...data.data);
    if (data.next_cursor === null) return { data: records, response };
    cursor = data.next_cursor;
  }
}
