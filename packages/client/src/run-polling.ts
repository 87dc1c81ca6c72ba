import type { Client } from 'openapi-fetch';
import type { CreateRunRequest, paths, Run, RunItemError, RunItemResult } from './api-types.js';
import { type CallResult, failureOf, resultOf } from './call-result.js';
import { type PollOptions, pollUntil } from './resource-polling.js';

/**
 * @deprecated Use {@link CallResult}, the same type under a name that fits every helper (it is also what
 * `scoreSubject`, `getPolicy` and the erasure helpers answer, not only the run helpers).
 */
export type RunCallResult<T> = CallResult<T>;

/**
 * Starts a run: `POST /v1/scoring/runs`, with an `Idempotency-Key` when given, so that retrying after a
 * network error cannot start a second run. Answers the queued run, or the problem (for example
 * `validation_failed`, whose `errors` name each bad item's index and field).
 */
export async function submitRun(
  client: Client<paths>,
  body: CreateRunRequest,
  options: { idempotencyKey?: string; signal?: AbortSignal } = {},
): Promise<CallResult<Run>> {
  const { data, error, response } = await client.POST('/v1/scoring/runs', {
    body,
    ...(options.idempotencyKey !== undefined && { headers: { 'Idempotency-Key': options.idempotencyKey } }),
    ...(options.signal && { signal: options.signal }),
  });
  return resultOf(data, error, response);
}

/** How {@link waitForRun} polls. Every field has a default. */
export interface WaitForRunOptions extends PollOptions {
  /**
   * Called with the run as each poll reads it (the last call is of the ended run): its `progress`
   * (`attempted`, `failed`, `items_per_second`) and `item_count` drive a progress bar or an estimate of
   * the time left. An error it throws ends the wait with that error.
   */
  onProgress?: (run: Run) => void;
}

/**
 * Polls `GET /v1/scoring/runs/{id}` until the run has ended (`completed` or `failed`) and answers it.
 * Waits grow from `initialDelayMs` to `maxDelayMs` with jitter; after a 429 or 503 it waits what
 * `Retry-After` asks. Any other error (such as 404 for an unknown run) is answered as `error`. Aborting
 * `signal` rejects with its reason, like `fetch`. `onProgress` sees the run at every poll.
 */
export function waitForRun(
  client: Client<paths>,
  runId: string,
  options: WaitForRunOptions = {},
): Promise<CallResult<Run>> {
  const { onProgress, ...polling } = options;
  return pollUntil(
    (signal) =>
      client.GET('/v1/scoring/runs/{id}', { params: { path: { id: runId } }, ...(signal && { signal }) }),
    (run) => {
      onProgress?.(run);
      return run.status === 'completed' || run.status === 'failed';
    },
    polling,
  );
}

/** An item of a run's results: scored, or its own error. */
export type RunItem = RunItemResult | RunItemError;

/**
 * Reads every attempted item of a run, following `next_cursor` page by page (`limit` items a page,
 * default 1000), in item order. Answers the first page's problem as `error` if a page fails.
 */
export async function fetchRunResults(
  client: Client<paths>,
  runId: string,
  options: { limit?: number; signal?: AbortSignal } = {},
): Promise<CallResult<RunItem[]>> {
  const items: RunItem[] = [];
  let cursor: string | undefined;
  for (;;) {
    const { data, error, response } = await client.GET('/v1/scoring/runs/{id}/results', {
      params: { path: { id: runId }, query: { limit: options.limit ?? 1000, ...(cursor && { cursor }) } },
      ...(options.signal && { signal: options.signal }),
    });
    if (!data) return failureOf(error, response);
    // Asked for JSON (the default Accept), so never the NDJSON form's text.
    const page = data as Exclude<typeof data, string>;
    items.push(...page.data);
    if (page.next_cursor === null) return { data: items, response };
    cursor = page.next_cursor;
  }
}
