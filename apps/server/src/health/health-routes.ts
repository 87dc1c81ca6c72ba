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

/** A log self-check fault as `/readyz` shows it: which leaves, never which tenant. */
export interface ReadinessLogFault {
  treeSize: number;
  firstIndex: number;
  endIndex: number;
  detectedAt: string;
}

/** What `/readyz` says of a log fault: tenant-free, the same for each. */
const LOG_FAULT_DESCRIPTION =
  "A tenant's stored log hashes do not recompute its last signed checkpoint; its log is not signed until an operator restores the data and clears the fault.";

/** What `/readyz` looks at. */
export interface ReadinessSources {
  storage: Pick<Storage, 'db'>;
  workers: readonly Pick<BackgroundWorker, 'running'>[];
  lifecycle: Pick<InstanceLifecycle, 'phase'>;
  /** The log self-check faults no operator has cleared (verifiable-log, wired by the app); none by default. */
  logFaults?: () => Promise<readonly ReadinessLogFault[]>;
}

/**
 * `GET /readyz`: 200 `ready` when the database answers, every migration of this build is applied (read
 * from the database on each call), every background worker runs and no tenant's log is stopped by a
 * self-check fault; otherwise 503 with Retry-After and `starting` or `draining` (whatever the checks say)
 * or `unavailable`, with the faults' leaf ranges (no tenant) in `log_faults`. Two queries per probe, run
 * together: the applied migrations (which also tell whether the database answers) and the open faults.
 */
export function readinessRoute(sources: ReadinessSources): OperationHandler<'getReadiness'> {
  const { storage, workers, lifecycle, logFaults = async () => [] } = sources;
  return async (_req, res) => {
    const [pending, faults] = await Promise.all([
      pendingMigrations(storage.db).catch(() => undefined),
      logFaults().catch(() => undefined),
    ]);
    const checks = {
      database: pending !== undefined,
      migrations: pending?.length === 0,
      workers: workers.every((worker) => worker.running),
      log: faults?.length === 0,
    };
    const phase = lifecycle.phase;
    if (phase === 'running' && checks.database && checks.migrations && checks.workers && checks.log) {
      res.json({ status: 'ready', checks });
      return;
    }
    res.status(503).setHeader('Retry-After', String(NOT_READY_RETRY_AFTER_SECONDS));
    res.json({
      status: phase === 'running' ? 'unavailable' : phase,
      checks,
      ...(faults !== undefined && faults.length > 0 && { log_faults: faults.map(logFaultView) }),
    });
  };
}

function logFaultView(fault: ReadinessLogFault) {
  return {
    description: LOG_FAULT_DESCRIPTION,
    first_index: fault.firstIndex,
    end_index: fault.endIndex,
    tree_size: fault.treeSize,
    detected_at: fault.detectedAt,
  };
}
