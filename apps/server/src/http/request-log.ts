import type { RequestHandler } from 'express';
import type { Logger } from '../logger.js';

/** Probes that succeed are not logged: a load balancer asks every few seconds, and the lines say nothing. */
const QUIET_WHEN_OK = new Set(['getHealth', 'getReadiness']);

/**
 * Writes ONE line per request when its response ends: request id, tenant (once authenticated),
 * operationId, method, status and duration; `aborted` when the client went away first. Never a header,
 * a query or a body. 5xx answers are logged at level error.
 */
export function logRequests(logger: Logger): RequestHandler {
  return (req, res, next) => {
    res.once('close', () => {
      const operation = res.locals.operationId;
      const status = res.statusCode;
      if (status < 400 && operation !== undefined && QUIET_WHEN_OK.has(operation)) return;
      const fields: Record<string, unknown> = {
        requestId: res.locals.requestId,
        tenant: res.locals.apiKey?.tenantId,
        operation,
        method: req.method,
        status,
        durationMs: Math.round((performance.now() - res.locals.startedAt) * 100) / 100,
      };
      if (!res.writableFinished) fields.aborted = true;
      if (status >= 500) logger.error('request', fields);
      else logger.info('request', fields);
    });
    next();
  };
}
