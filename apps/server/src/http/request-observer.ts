import type { RequestHandler } from 'express';
import { ERROR_CODES } from '../errors/error-codes.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../request-logging/logger.js';
import type { RequestLine } from '../request-logging/request-line.js';
import { CLIENT_CLOSED_REQUEST } from '../transport/client-abort.js';
import { requestTimedOut } from '../transport/client-error.js';
import { requestMethod } from './head-requests.js';

/** Probes that succeed are not logged: a load balancer asks every few seconds, and the lines say nothing. */
const QUIET_WHEN_OK = new Set(['getHealth', 'getReadiness']);

/** Lines a second, at most, for requests refused before a key was found (401, and 429 without a key). */
export const UNAUTHENTICATED_LINES_PER_SECOND = 10;

/**
 * The methods OpenTelemetry's `http.request.method` names as they are; any other is `_OTHER`, so a client
 * cannot make a series per invented method.
 */
const KNOWN_METHODS = new Set([
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'DELETE',
  'CONNECT',
  'OPTIONS',
  'TRACE',
  'PATCH',
]);

/** The route template of each operationId, e.g. `getLogRecord` → `/v1/logs/{cid}`. */
export type RouteTemplates = ReadonlyMap<string, string>;

/**
 * Observes each request once, when its response ends or its connection closes first (runs after
 * `identifyOperation`):
 *
 * - its duration goes into `httpRequestDuration`, by method, route template (from `routes`: the contract's
 *   path of the matched operation, never the raw path; empty when none matched) and status;
 * - ONE log line: request id, tenant (once authenticated), operationId, method, status and duration;
 *   `aborted` when the client went away first. Never a header, a query or a body. 5xx answers are
 *   logged at level error, except a probe's 503 (starting or draining: the
 *   state the probe reports, at info); successful probes are not logged. Requests refused before a key
 *   was found (a 401, or a 429 to a client without a known key) are sampled: at most
 *   `unauthenticatedLinesPerSecond` lines a second, and the next line written says in `suppressed` how
 *   many were left out before it, so a flood of anonymous requests cannot write megabytes a second
 *   (their durations are still all measured).
 */
export function observeRequests(
  logger: Logger,
  metrics: Pick<Metrics, 'httpRequestDuration'>,
  options: { unauthenticatedLinesPerSecond?: number; now?: () => number; routes?: RouteTemplates } = {},
): RequestHandler {
  const routes = options.routes ?? new Map<string, string>();
  const linesPerSecond = options.unauthenticatedLinesPerSecond ?? UNAUTHENTICATED_LINES_PER_SECOND;
  const now = options.now ?? performance.now.bind(performance);
  let second = Number.NEGATIVE_INFINITY;
  let written = 0;
  let suppressed = 0;
  /** Whether this unauthenticated line may be written (a fixed one-second window). */
  const sampled = (): boolean => {
    const time = now();
    if (time - second >= 1000) {
      second = time;
      written = 0;
    }
    if (written >= linesPerSecond) {
      suppressed++;
      return false;
    }
    written++;
    return true;
  };
  return (req, res, next) => {
    res.once('close', () => {
      const durationMs = performance.now() - res.locals.startedAt;
      const operation = res.locals.operationId;
      // Cut off by Node's request timeout, the request was answered 408 on its socket, not by Express.
      const timedOut = requestTimedOut(req.socket);
      // The connection closed before an answer was sent (the client left, or a shutdown's grace ran out):
      // 499, as for a client gone while its body was read, not the 200 Node's response starts with.
      const status = timedOut
        ? ERROR_CODES.request_timeout.status
        : res.headersSent
          ? res.statusCode
          : CLIENT_CLOSED_REQUEST;
      const method = requestMethod(req, res);
      metrics.httpRequestDuration.observe(
        {
          http_request_method: KNOWN_METHODS.has(method) ? method : '_OTHER',
          http_route: (operation !== undefined && routes.get(operation)) || '',
          http_response_status_code: String(status),
        },
        durationMs / 1000,
      );
      if (status < 400 && operation !== undefined && QUIET_WHEN_OK.has(operation)) return;
      const line: RequestLine = {
        requestId: res.locals.requestId,
        tenant: res.locals.apiKey?.tenantId,
        operation,
        method,
        status,
        durationMs: Math.round(durationMs * 100) / 100,
      };
      if (!res.writableFinished && !timedOut) line.aborted = true;
      const trace = res.locals.trace;
      if (trace !== undefined) {
        line.traceId = trace.traceId;
        line.spanId = trace.spanId;
      }
      if (line.tenant === undefined && (status === 401 || status === 429)) {
        if (!sampled()) return;
        if (suppressed > 0) {
          line.suppressed = suppressed;
          suppressed = 0;
        }
      }
      // A probe's 503 (starting, draining) is the instance's state, said on purpose: not an error.
      const severity = status >= 500 && !QUIET_WHEN_OK.has(operation ?? '') ? 'error' : 'info';
      if (logger.request) logger.request(severity, line);
      else logger[severity]('request', { ...line });
    });
    next();
  };
}
