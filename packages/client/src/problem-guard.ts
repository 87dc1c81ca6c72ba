import type { ErrorCode, Problem } from './api-types.js';

/** An RFC 9457 problem, as every error response of the API carries it (`application/problem+json`). */
export type { Problem };

/**
 * The stable, machine-readable `code` of a problem (`validation_failed`, `rate_limited`, …). New codes
 * may be added: handle an unknown one by its `status`.
 */
export type ProblemCode = ErrorCode;

/**
 * Tells whether a value is a problem object, such as the `error` of a response. The `error` of a response
 * that was not a problem (a proxy's HTML page, an empty body) is a string or undefined instead.
 */
export function isProblem(value: unknown): value is Problem {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Record<string, unknown>;
  return (
    typeof candidate.code === 'string' &&
    typeof candidate.status === 'number' &&
    typeof candidate.title === 'string' &&
    typeof candidate.type === 'string'
  );
}
