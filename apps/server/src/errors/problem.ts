import type { Problem, ValidationError } from '@scenario-scoring/api-types';
import { ERROR_CODES, type ErrorCode } from './error-codes.js';

/** The contract caps `errors` at this many items. */
export const MAX_PROBLEM_ERRORS = 100;
const MAX_DETAIL_CHARS = 4096;

/** An RFC 9457 problem for `code`: `type` links to the code's entry in the error guide served at `/docs`. */
export function problem(
  code: ErrorCode,
  occurrence: { detail: string; instance?: string; requestId?: string; errors?: ValidationError[] },
): Problem {
  const { status, title } = ERROR_CODES[code];
  const body: Problem = {
    type: `/docs#section/errors/${code}`,
    title,
    status,
    detail: occurrence.detail.slice(0, MAX_DETAIL_CHARS),
    code,
  };
  if (occurrence.instance !== undefined) body.instance = occurrence.instance;
  if (occurrence.requestId !== undefined) body.request_id = occurrence.requestId;
  if (occurrence.errors !== undefined) body.errors = occurrence.errors.slice(0, MAX_PROBLEM_ERRORS);
  return body;
}
