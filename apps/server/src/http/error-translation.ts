import type { ValidationError } from '@scenario-scoring/api-types';
import { error as validatorErrors } from 'express-openapi-validator';
import { AppError } from '../errors/app-error.js';
import { validationDetail } from '../errors/validation-detail.js';
import { isStorageBusy } from '../storage/storage-busy.js';
import { fromDecompression } from '../transport/content-encoding.js';
import { jsonSyntaxErrorMessage } from '../transport/json-syntax-error.js';

/** What translating a foreign error needs to know about the request and the server. */
export interface TranslationContext {
  method: string;
  path: string;
  bodyLimitBytes: number;
  /** The methods the contract allows at a path, or undefined for a path it does not have. */
  allowedMethods(path: string): readonly string[] | undefined;
}

/**
 * The AppError for an error thrown by the body parser, the contract validator or the router, or undefined
 * for an unexpected error (a bug or an outage), which the caller answers with `internal_error`.
 */
export function translateError(error: unknown, context: TranslationContext): AppError | undefined {
  if (error instanceof AppError) return error;
  if (typeof error !== 'object' || error === null) return undefined;
  return (
    fromBodyParser(error, context) ??
    fromDecompression(error) ??
    fromValidator(error, context) ??
    fromBusyStorage(error)
  );
}

/**
 * A write the database could not take now (another writer held it past the wait, or the server is going
 * away): `503 storage_unavailable` with Retry-After, as a scoring whose record waited too long is answered,
 * never `500`. Nothing was stored: the transaction was rolled back.
 */
function fromBusyStorage(error: object): AppError | undefined {
  if (!isStorageBusy(error)) return undefined;
  return new AppError('storage_unavailable', {
    detail: 'The database could not take the write now (another writer held it); nothing was stored: retry.',
    headers: { 'Retry-After': '1' },
  });
}

// body-parser tags its errors with a `type`; see its README's "Errors" section.
function fromBodyParser(error: object, context: TranslationContext): AppError | undefined {
  const { type, message, body } = error as { type?: unknown; message?: unknown; body?: unknown };
  switch (type) {
    case 'entity.parse.failed':
      // Never V8's message as it is: for an unexpected token it quotes the body (personal data).
      return new AppError('malformed_json', {
        detail: `The body is not valid JSON: ${jsonSyntaxErrorMessage(String(message), typeof body === 'string' ? body : undefined)}.`,
      });
    case 'entity.too.large':
      return new AppError('payload_too_large', {
        detail: `The body is larger than the limit of ${context.bodyLimitBytes} bytes.`,
      });
    case 'request.size.invalid':
      return new AppError('malformed_json', {
        detail: 'The body is not as long as its Content-Length says.',
      });
    case 'encoding.unsupported':
      return new AppError('unsupported_media_type', {
        detail: `The body's Content-Encoding is not supported: ${String(message)}.`,
      });
    case 'charset.unsupported':
      return new AppError('unsupported_media_type', {
        detail: `The body's charset is not supported (send UTF-8): ${String(message)}.`,
      });
    default:
      return undefined;
  }
}

function fromValidator(error: object, context: TranslationContext): AppError | undefined {
  if (error instanceof validatorErrors.BadRequest) {
    const errors = error.errors.map(toValidationError);
    return new AppError('validation_failed', { detail: validationDetail(errors), errors });
  }
  if (error instanceof validatorErrors.NotFound) return notFound(context);
  if (error instanceof validatorErrors.MethodNotAllowed) {
    const allowed = context.allowedMethods(context.path);
    if (allowed === undefined) return notFound(context);
    return new AppError('method_not_allowed', {
      detail: `${context.method} is not allowed on ${context.path}; it takes ${allowed.join(', ')}.`,
      headers: { Allow: allowed.join(', ') },
    });
  }
  if (error instanceof validatorErrors.UnsupportedMediaType) {
    return new AppError('unsupported_media_type', { detail: 'Send the body as application/json.' });
  }
  if (error instanceof validatorErrors.RequestEntityTooLarge) {
    return new AppError('payload_too_large', {
      detail: `The body is larger than the limit of ${context.bodyLimitBytes} bytes.`,
    });
  }
  return undefined;
}

function notFound(context: TranslationContext): AppError {
  return new AppError('not_found', { detail: `No operation exists at ${context.method} ${context.path}.` });
}

const LOCATIONS = ['/body', '/query/', '/headers/'] as const;

/** The validator's error path in the contract's form: `/body/...`, `/query/<name>`, `/path/<name>`, `/headers/<name>`. */
function toValidationError(item: { path?: string; message: string }): ValidationError {
  const path = item.path ?? '';
  // The validator reports a missing body as a missing property named "body" of the request.
  if (path === '/body' && item.message === "must have required property 'body'") {
    return { path, message: 'a JSON body is required' };
  }
  if (path.startsWith('/params/'))
    return { path: `/path/${path.slice('/params/'.length)}`, message: item.message };
  if (LOCATIONS.some((prefix) => path.startsWith(prefix))) return { path, message: item.message };
  // A failure about the request as a whole has no field to point at; the validator's only one is a path
  // that does not decode ("malformed uri'", sic).
  const message = item.message.startsWith('malformed uri') ? 'is not valid percent-encoding' : item.message;
  return { path: '/path', message };
}
