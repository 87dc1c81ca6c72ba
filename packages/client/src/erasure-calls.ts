import type { Client } from 'openapi-fetch';
import type { Erasure, paths, SubjectRecord } from './api-types.js';
import { type CallResult, failureOf, resultOf } from './call-result.js';
import { type PollOptions, pollUntil } from './resource-polling.js';

/** @deprecated Use {@link CallResult}, the same type under the name every helper's result has. */
export type ErasureCallResult<T> = CallResult<T>;

/**
 * Erases everything the tenant holds about `subject`: `POST /v1/erasures`, with an `Idempotency-Key` when
 * given (so a retry after a network error asks once). Answers the accepted erasure (`pending`); it completes
 * in the background: {@link waitForErasure}. The subject travels in the body, never in the URL.
 */
export async function eraseSubject(
  client: Client<paths>,
  subject: string,
  options: { idempotencyKey?: string; signal?: AbortSignal } = {},
): Promise<CallResult<Erasure>> {
  const { data, error, response } = await client.POST('/v1/erasures', {
    body: { subject },
    ...(options.idempotencyKey !== undefined && { headers: { 'Idempotency-Key': options.idempotencyKey } }),
    ...(options.signal && { signal: options.signal }),
  });
  return resultOf(data, error, response);
}

/**
 * `GET /v1/erasures/{id}`: the erasure's status, counts and, once completed, the CIDs it erased (the first
 * 1,000, with `log_cids_has_more` when there are more: {@link listErasedLogCids} lists them all).
 */
export async function getErasure(
  client: Client<paths>,
  erasureId: string,
  options: { signal?: AbortSignal } = {},
): Promise<CallResult<Erasure>> {
  const { data, error, response } = await client.GET('/v1/erasures/{id}', {
    params: { path: { id: erasureId } },
    ...(options.signal && { signal: options.signal }),
  });
  return resultOf(data, error, response);
}

/** How {@link waitForErasure} polls. Every field has a default. */
export type WaitForErasureOptions = PollOptions;

/**
 * Polls `GET /v1/erasures/{id}` until the erasure is `completed` and answers it (with its counts and the
 * erased CIDs). Waits grow from `initialDelayMs` to `maxDelayMs` with jitter; after a 429 or 503 it waits
 * what `Retry-After` asks. Any other error (such as 404 for an unknown erasure, or another tenant's) is
 * answered as `error`. Aborting `signal` rejects with its reason.
 */
export function waitForErasure(
  client: Client<paths>,
  erasureId: string,
  options: WaitForErasureOptions = {},
): Promise<CallResult<Erasure>> {
  return pollUntil(
    (signal) =>
      client.GET('/v1/erasures/{id}', { params: { path: { id: erasureId } }, ...(signal && { signal }) }),
    (erasure) => erasure.status === 'completed',
    options,
  );
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
): Promise<CallResult<SubjectRecord[]>> {
  const records: SubjectRecord[] = [];
  let cursor: string | undefined;
  for (;;) {
    const { data, error, response } = await client.POST('/v1/subjects/records', {
      body: { subject, limit: options.limit ?? 100, ...(cursor && { cursor }) },
      ...(options.signal && { signal: options.signal }),
    });
    if (!data) return failureOf(error, response);
    records.push(...data.data);
    if (data.next_cursor === null) return { data: records, response };
    cursor = data.next_cursor;
  }
}

/**
 * Every CID an erasure erased, in CID order: `GET /v1/erasures/{id}/log-cids` page by page (`limit` a page,
 * default and most 1,000), following `next_cursor`. `GET /v1/erasures/{id}` shows only the first 1,000 (with
 * `log_cids_has_more` when there are more); a retention erasure can hold millions, so mind what you keep.
 * Empty while the erasure is pending. Answers the first failing page's problem as `error`.
 */
export async function listErasedLogCids(
  client: Client<paths>,
  erasureId: string,
  options: { limit?: number; signal?: AbortSignal } = {},
): Promise<CallResult<string[]>> {
  const cids: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    const { data, error, response } = await client.GET('/v1/erasures/{id}/log-cids', {
      params: {
        path: { id: erasureId },
        query: { ...(options.limit !== undefined && { limit: options.limit }), ...(cursor && { cursor }) },
      },
      ...(options.signal && { signal: options.signal }),
    });
    if (!data) return failureOf(error, response);
    cids.push(...data.data);
    if (data.next_cursor === null) return { data: cids, response };
    cursor = data.next_cursor;
  }
}
