import type { ValidationError } from '@scenario-scoring/api-types';
import { ERROR_CODES, type ErrorCode } from './error-codes.js';

/** What an AppError adds to its code: the occurrence's detail, validation errors and response headers. */
export interface AppErrorOptions {
  detail: string;
  errors?: ValidationError[];
  headers?: Record<string, string>;
  cause?: unknown;
}

/**
 * The one error type of the server: a contract error code with this occurrence's detail. The central error
 * handler turns it into a problem; anything else thrown becomes a 500 `internal_error`.
 */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly detail: string;
  readonly errors: ValidationError[] | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(code: ErrorCode, options: AppErrorOptions) {
    super(`${code}: ${options.detail}`, { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.detail = options.detail;
    this.errors = options.errors;
    this.headers = options.headers;
  }
}
