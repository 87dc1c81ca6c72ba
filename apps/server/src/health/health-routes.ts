import type { OperationHandler } from '../http/operation-route.js';
import { pendingMigrations } from '../storage/migrate.js';
import type { Storage } from '../storage/storage.js';
import type { BackgroundWorker } from '../workers/background-worker.js';
import type { InstanceLifecycle } from './instance-lifecycle.js';

/** Seconds a load balancer should wait before asking a not-ready instance again. */
const NOT_READY_RETRY_AFTER_SECONDS = 5;

/** `GET /healthz`: alive while the process runs, whatever the database does. */
export const healthRoute: OperationHandler<'getHealth'> = (_req, res) => {
  res.json({ status: 'ok' });
};

/** What `/readyz` looks at. */
export interface ReadinessSources {
  storage: Pick<Storage, 'db'>;
  workers: readonly Pick<BackgroundWorker, 'running'>[];
  lifecycle: Pick<InstanceLifecycle, 'phase'>;
}

/**
 * `GET /readyz`: 200 `ready` when the database answers, every migration of this build is applied (read
 * from the database on each call) and every background worker runs; otherwise 503 with Retry-After and
 * `starting` or `draining` (whatever the checks say) or `unavailable`. One query per probe: reading the
 * applied migrations also tells whether the database answers.
 */
export function readinessRoute(sources: ReadinessSources): OperationHandler<'getReadiness'> {
  const { storage, workers, lifecycle } = sources;
  return async (_req, res) => {
    const pending = await pendingMigrations(storage.db).catch(() => undefined);
    const checks = {
      database: pending !== undefined,
      migrations: pending?.length === 0,
      workers: workers.every((worker) => worker.running),
    };
    const phase = lifecycle.phase;
    if (phase === 'running' && checks.database && checks.migrations && checks.workers) {
      res.json({ status: 'ready', checks });
      return;
    }
    res.status(503).setHeader('Retry-After', String(NOT_READY_RETRY_AFTER_SECONDS));
    res.json({ status: phase === 'running' ? 'unavailable' : phase, checks });
  };
}
