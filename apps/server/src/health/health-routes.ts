import type { operations } from '@scenario-scoring/api-types';
import type { RequestHandler } from 'express';
import type { Storage } from '../storage/storage.js';
import type { BackgroundWorker } from '../workers/background-worker.js';

type Health = operations['getHealth']['responses'][200]['content']['application/json'];
type Readiness = operations['getReadiness']['responses'][200]['content']['application/json'];

/** Seconds a load balancer should wait before asking a not-ready instance again. */
const NOT_READY_RETRY_AFTER_SECONDS = 5;

/** `GET /healthz`: alive while the process runs, whatever the database does. */
export const healthRoute: RequestHandler<never, Health> = (_req, res) => {
  res.json({ status: 'ok' });
};

/**
 * `GET /readyz`: 200 when the database answers and every background worker runs; 503 otherwise.
 * Migrations ran when the storage opened.
 */
export function readinessRoute(
  storage: Pick<Storage, 'ping'>,
  workers: readonly Pick<BackgroundWorker, 'running'>[] = [],
): RequestHandler<never, Readiness> {
  return async (_req, res) => {
    const database = await storage.ping().catch(() => false);
    const checks = { database, migrations: true, workers: workers.every((worker) => worker.running) };
    if (checks.database && checks.workers) {
      res.json({ status: 'ready', checks });
      return;
    }
    res.status(503).setHeader('Retry-After', String(NOT_READY_RETRY_AFTER_SECONDS));
    res.json({ status: 'unavailable', checks });
  };
}
