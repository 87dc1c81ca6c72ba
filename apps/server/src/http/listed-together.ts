import type { ValidationError } from '@scenario-scoring/api-types';
import type { RequestHandler } from 'express';
import { AppError } from '../errors/app-error.js';
import { validationDetail } from '../errors/validation-detail.js';
import { translateError } from './error-translation.js';
import { inSequence } from './middleware-sequence.js';

/**
 * Runs `first` (the text policy), then `rest` (the bounds on unknown members, the contract validator)
 * even when `first` refused the request with 400 `validation_failed`, so that one answer lists every
 * problem of the request: `first`'s, then those of `rest` at other paths (one at a path `first` named says
 * the same thing in the validator's words: `from=0x10` is not a decimal integer, which the validator would
 * have coerced). The request never reaches its route when `first` refused it: if `rest` passes, or fails
 * otherwise than on validation, `first`'s refusal is the answer, as before.
 */
export function listedTogether(first: RequestHandler, rest: readonly RequestHandler[]): RequestHandler {
  const then = inSequence(rest);
  const policy = inSequence([first]);
  return (req, res, next) => {
    policy(req, res, (refusal?: unknown) => {
      if (refusal === undefined || refusal === null) return then(req, res, next);
      if (!(refusal instanceof AppError) || refusal.code !== 'validation_failed' || !refusal.errors)
        return next(refusal);
      const earlier = refusal.errors;
      then(req, res, (later?: unknown) => {
        const translated =
          later === undefined || later === null || typeof later === 'string'
            ? undefined
            : translateError(later, {
                method: req.method,
                path: req.path,
                bodyLimitBytes: 0,
                allowedMethods: () => undefined,
              });
        if (translated?.code !== 'validation_failed' || !translated.errors) return next(refusal);
        const named = new Set(earlier.map((error) => error.path));
        const errors: ValidationError[] = [
          ...earlier,
          ...translated.errors.filter((error) => !named.has(error.path)),
        ];
        next(new AppError('validation_failed', { detail: validationDetail(errors), errors }));
      });
    });
  };
}
