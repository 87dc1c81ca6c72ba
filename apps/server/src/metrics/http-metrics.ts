import type { RequestHandler } from 'express';
import type { Metrics } from './metrics.js';

/** The `operation` label of requests that match no operation of the contract (docs, unknown paths). */
export const UNMATCHED_OPERATION = 'unmatched';

/**
 * Observes every request's duration in `httpRequestDuration`, by operationId and status, when its
 * response ends (or its connection closes first). Runs after `identifyOperation`.
 */
export function recordRequestDuration(metrics: Pick<Metrics, 'httpRequestDuration'>): RequestHandler {
  return (_req, res, next) => {
    res.once('close', () => {
      const seconds = (performance.now() - res.locals.startedAt) / 1000;
      metrics.httpRequestDuration.observe(
        { operation: res.locals.operationId ?? UNMATCHED_OPERATION, status: String(res.statusCode) },
        seconds,
      );
    });
    next();
  };
}
