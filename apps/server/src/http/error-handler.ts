import type { ErrorRequestHandler, Response } from 'express';
import { AppError } from '../errors/app-error.js';
import { problem } from '../errors/problem.js';
import { describeError, type Logger } from '../request-logging/logger.js';
import { CLIENT_CLOSED_REQUEST, isClientAbort } from '../transport/client-abort.js';
import { requestTimedOut } from '../transport/client-error.js';
import { translateError } from './error-translation.js';
import { requestMethod } from './head-requests.js';

const MAX_INSTANCE_CHARS = 2048;

/** What the error handler needs from the app. */
export interface ErrorHandlerOptions {
  logger: Logger;
  bodyLimitBytes: number;
  allowedMethods(path: string): readonly string[] | undefined;
}

/**
 * The one error handler: every failure becomes a problem+json response with a stable `code` and the
 * request id. Unexpected errors are logged in full and answered with `internal_error`, disclosing nothing.
 */
export function createErrorHandler(options: ErrorHandlerOptions): ErrorRequestHandler {
  return (error, req, res, next) => {
    const requestId = res.locals.requestId;
    // With tracing on, every line of a traced request names its trace.
    const trace = res.locals.trace && {
      trace_id: res.locals.trace.traceId,
      span_id: res.locals.trace.spanId,
    };
    if (res.headersSent) {
      // Too late for a problem: let Express end the connection.
      options.logger.error('error after the response started', {
        requestId,
        ...trace,
        error: describeError(error),
      });
      next(error);
      return;
    }
    if (isClientAbort(error, req)) {
      // Nobody is left to answer: no problem, no stack, no 5xx. Or the request timeout cut it
      // off, and its 408 went out on the socket (transport/client-error.ts).
      const what = requestTimedOut(req.socket) ? 'the request timed out' : 'client aborted the request';
      options.logger.info(what, { requestId, ...trace, method: requestMethod(req, res), path: req.path });
      res.statusCode = CLIENT_CLOSED_REQUEST;
      res.destroy();
      return;
    }
    let appError = translateError(error, {
      method: requestMethod(req, res),
      path: req.path,
      bodyLimitBytes: options.bodyLimitBytes,
      allowedMethods: options.allowedMethods,
    });
    if (appError === undefined) {
      options.logger.error('unexpected error', {
        requestId,
        ...trace,
        method: requestMethod(req, res),
        path: req.path,
        error: describeError(error),
      });
      appError = new AppError('internal_error', {
        detail: 'The server failed unexpectedly. Quote the request_id when you report it.',
      });
    } else if (appError.status >= 500 && appError.code === 'internal_error') {
      // An internal error the server names (a damaged log record): its detail and cause are the
      // operator's to see too, not only the client's.
      options.logger.error('internal error', {
        requestId,
        ...trace,
        method: requestMethod(req, res),
        path: req.path,
        error: describeError(error),
      });
    }
    // A body this answer leaves unread is read off after it, up to a bound (transport/unread-body.ts).
    sendProblem(res, appError, req.path, requestId);
  };
}

/** Answers with the problem of `error`, its headers included. */
export function sendProblem(
  res: Response,
  error: AppError,
  path: string,
  requestId: string | undefined,
): void {
  if (error.headers !== undefined) res.set(error.headers);
  res.status(error.status).type('application/problem+json');
  const body = problem(error.code, {
    detail: error.detail,
    instance: path.slice(0, MAX_INSTANCE_CHARS),
    ...(requestId !== undefined && { requestId }),
    ...(error.errors !== undefined && { errors: error.errors }),
  });
  res.json(body);
}
