import type { RequestHandler } from 'express';
import { ERROR_CODES } from '../errors/error-codes.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../request-logging/logger.js';
import type { RequestLine } from '../request-logging/request-line.js';
import { requestTimedOut } from '../transport/client-error.js';
import { requestMethod } from './head-requests.js';

/** Probes that succeed are not logged: a load balancer asks every few seconds, and the lines say nothing. */
const QUIET_WHEN_OK = new Set(['getHealth', 'getReadiness']);

/** The `operation` label of requests that match no operation of the contract (docs, unknown paths). */
const UNMATCHED_OPERATION = 'unmatched';

/**
 * Observes each request once, when its response ends or its connection closes first (runs after
 * `identifyOperation`):
 *
 * - its duration goes into `httpRequestDuration`, by operationId (or `unmatched`) and status;
 * - ONE log line: request id, tenant (once authenticated), operationId, method, status and duration;
 *   `aborted` when the client went away first. Never a header, a query or a body. 5xx answers are
 *   logged at level error, except a probe's 503 (starting or draining: the
 *   state the probe reports, at info); successful probes are not logged.
 */
export function observeRequests(
  logger: Logger,
  metrics: Pick<Metrics, 'httpRequestDuration'>,
): RequestHandler {
  return (req, res, next) => {
    res.once('close', () => {
      const durationMs = performance.now() - res.locals.startedAt;
      const operation = res.locals.operationId;
      // Cut off by Node's request timeout, the request was answered 408 on its socket, not by Express.
      const timedOut = requestTimedOut(req.socket);
      const status = timedOut ? ERROR_CODES.request_timeout.status : res.statusCode;
      metrics.httpRequestDuration.observe(
        { operation: operation ?? UNMATCHED_OPERATION, status: String(status) },
        durationMs / 1000,
      );
      if (status < 400 && operation !== undefined && QUIET_WHEN_OK.has(operation)) return;
      const line: RequestLine = {
        requestId: res.locals.requestId,
        tenant: res.locals.apiKey?.tenantId,
        operation,
        method: requestMethod(req, res),
        status,
        durationMs: Math.round(durationMs * 100) / 100,
      };
      if (!res.writableFinished && !timedOut) line.aborted = true;
      // A probe's 503 (starting, draining) is the instance's state, said on purpose: not an error.
      const severity = status >= 500 && !QUIET_WHEN_OK.has(operation ?? '') ? 'error' : 'info';
      if (logger.request) logger.request(severity, line);
      else logger[severity]('request', { ...line });
    });
    next();
  };
}
