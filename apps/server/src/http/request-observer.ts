import type { RequestHandler } from 'express';
import type { Logger } from '../logging/logger.js';
import type { RequestLine } from '../logging/request-line.js';
import type { Metrics } from '../metrics/metrics.js';

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
 *   logged at level error; successful probes are not logged.
 */
export function observeRequests(
  logger: Logger,
  metrics: Pick<Metrics, 'httpRequestDuration'>,
): RequestHandler {
  return (req, res, next) => {
    res.once('close', () => {
      const durationMs = performance.now() - res.locals.startedAt;
      const operation = res.locals.operationId;
      const status = res.statusCode;
      metrics.httpRequestDuration.observe(
        { operation: operation ?? UNMATCHED_OPERATION, status: String(status) },
        durationMs / 1000,
      );
      if (status < 400 && operation !== undefined && QUIET_WHEN_OK.has(operation)) return;
      const line: RequestLine = {
        requestId: res.locals.requestId,
        tenant: res.locals.apiKey?.tenantId,
        operation,
        method: req.method,
        status,
        durationMs: Math.round(durationMs * 100) / 100,
      };
      if (!res.writableFinished) line.aborted = true;
      const severity = status >= 500 ? 'error' : 'info';
      if (logger.request) logger.request(severity, line);
      else logger[severity]('request', { ...line });
    });
    next();
  };
}
