import type { Problem } from './problem-guard.js';

/**
 * What a typed helper answers (`scoreSubject`, `submitRun`, `waitForErasure`, …): its data, or the problem
 * the server answered with, never both, as openapi-fetch's own calls do. `error` is always set in the error
 * branch, so checking either field narrows the other:
 *
 * ```ts
 * const accepted = await eraseSubject(client, 'applicant-42');
 * if (accepted.error) throw new Error(accepted.error.detail);
 * accepted.data.id; // typed Erasure: no `?.` needed
 * ```
 */
export type CallResult<T, E = Problem> =
  | { data: T; error?: never; response: Response }
  | { data?: never; error: E; response: Response };

/** Codes for an answer that carried no problem, chosen by its status. */
const CODE_OF_STATUS: Record<number, Problem['code']> = {
  404: 'not_found',
  408: 'request_timeout',
  413: 'payload_too_large',
  429: 'rate_limited',
  503: 'service_unavailable',
};

/**
 * The problem of a failed call: the one the server sent, or, when the answer had no body (a proxy's empty
 * 502, a 200 without content), a problem made from its status, so that a result's `error` is never empty.
 */
export function problemOf(error: Problem | undefined, response: Response): Problem {
  if (error) return error;
  const { status } = response;
  return {
    type: 'about:blank',
    title: response.statusText || `HTTP ${status}`,
    status,
    detail: `The server answered ${status} without a problem body.`,
    code: CODE_OF_STATUS[status] ?? 'internal_error',
  };
}

/** A helper's result from a call's `data` (kept when defined) or else its `error`, made never empty. */
export function resultOf<T>(
  data: T | undefined,
  error: Problem | undefined,
  response: Response,
): CallResult<T> {
  return data !== undefined ? { data, response } : failureOf(error, response);
}

/** The error branch of a helper's result: the call's problem, made never empty. */
export function failureOf(
  error: Problem | undefined,
  response: Response,
): { data?: never; error: Problem; response: Response } {
  return { error: problemOf(error, response), response };
}
