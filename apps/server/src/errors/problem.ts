import type { Problem, ValidationError } from '@scenario-scoring/api-types';
import { ERROR_CODES, type ErrorCode } from './error-codes.js';

/** The contract caps `errors` at this many items. */
export const MAX_PROBLEM_ERRORS = 100;
const MAX_DETAIL_CHARS = 4096;
/** The contract's bounds of one validation error's `path` and `message`. */
const MAX_ERROR_PATH_CHARS = 512;
const MAX_ERROR_MESSAGE_CHARS = 1024;

/** `text` cut to `max` UTF-16 units, never in the middle of a surrogate pair. */
function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max);
  const last = cut.charCodeAt(cut.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? cut.slice(0, -1) : cut;
}

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
    detail: clip(occurrence.detail, MAX_DETAIL_CHARS),
    code,
  };
  if (occurrence.instance !== undefined) body.instance = occurrence.instance;
  if (occurrence.requestId !== undefined) body.request_id = occurrence.requestId;
  // A path may name a 1 MB key the client sent: it is cut to the contract's bound, like the detail.
  if (occurrence.errors !== undefined)
    body.errors = occurrence.errors.slice(0, MAX_PROBLEM_ERRORS).map((error) => ({
      path: clip(error.path, MAX_ERROR_PATH_CHARS),
      message: clip(error.message, MAX_ERROR_MESSAGE_CHARS),
    }));
  return body;
}
