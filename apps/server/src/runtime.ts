import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { NoteSigner } from '@scenario-scoring/tlog';
import { createApp } from './app.js';
import { systemClock } from './common/clock.js';
import { loadContract } from './common/contract.js';
import { createWorkers, type WorkerDependencies } from './create-workers.js';
import { wireFeatures } from './features.js';
import { InstanceLifecycle } from './health/instance-lifecycle.js';
import { contractValidation, warmUpContractValidation } from './http/contract-validation.js';
import { createMetrics } from './metrics/metrics.js';
import { type MetricsServer, startMetricsServer } from './metrics/metrics-server.js';
import type { Logger } from './request-logging/logger.js';
import type { Config } from './server-config.js';
import { checkDeploymentKeys } from './storage/deployment-keys.js';
import { takeServerLock } from './storage/server-lock.js';
import { openStorage } from './storage/storage.js';
import { createApiServer } from './transport/api-server.js';
import { enforceBodyDeadline } from './transport/body-deadline.js';
import { closeGracefully } from './transport/graceful-close.js';
import { loadLogSigningKey } from './verifiable-log/log-signing-key.js';
import { checkAddress } from './webhooks/outbound/outbound-address-policy.js';
import { loadSecretsKey, SecretBox } from './webhooks/outbound/secret-box.js';
import type { BackgroundWorker } from './workers/background-worker.js';

/** How often a server on SQLite checks that `DATA_DIR/server.lock` is still the file it holds. */
const LOCK_CHECK_MS = 2000;

/** The longest grace requests in flight get when the server stops because it lost its lock. */
const LOCK_LOST_GRACE_MS = 1000;

/** Bounds a request's headers and body, so a client that sends them slowly cannot hold a connection. */
const REQUEST_TIMEOUT_MS = 30_000;

/** The variable that lets webhooks reach a receiver on this machine, as the first-key line shows it. */
export const LOCAL_RECEIVER_SETTING = 'WEBHOOK_ALLOWED_CIDRS=127.0.0.1/32,::1/128';

/**
 * Said after the first key when webhooks to this machine are refused (the default, NODE_ENV=production):
 * a newcomer's first receiver is usually local, and would otherwise be refused `webhook_url_refused`.
 */
function localReceiverHint(config: Config): string {
  if (checkAddress('127.0.0.1', config.webhooks.allowedCidrs).allowed) return '';
  return ` (webhooks to a receiver on this machine are refused: to allow them, start with ${LOCAL_RECEIVER_SETTING})`;
}

/** What a runtime is started with; tests replace the workers and the announcements. */
export interface RuntimeOptions {
  config: Config;
  logger: Logger;
  /** Builds the background workers; by default every worker of the server. */
  workers?: (dependencies: WorkerDependencies) => BackgroundWorker[];
  /** Called with each line meant for the operator's terminal (the first key, where it listens). */
  announce?: (line: string) => void;
  /**
   * Called when this server lost its lock on the SQLite DATA_DIR (server.lock was replaced by a file
   * another server holds, or one that cannot be the lock), with a ServerLockLostError; the runtime has
   * already begun to stop (`stop({ lockLost: true })`).
   */
  onLockLost?: (error: Error) => void;
  /** How often the lock file is checked (`ServerLock.check`), in ms; 2,000 by default. */
  lockCheckMs?: number;
}

/** A running instance: storage, workers, the HTTP server and the metrics listener. */
export interface Runtime {
  readonly url: string;
  readonly server: Server;
  /** The metrics listener's scrape URL, when `METRICS_PORT` is set. */
  readonly metricsUrl: string | undefined;
  readonly lifecycle: InstanceLifecycle;
  /**
   * Drains: `/readyz` answers 503 `draining` (for `SHUTDOWN_DRAIN_DELAY` while requests are still
   * served), then the listener closes, requests in flight finish (cut after `SHUTDOWN_GRACE`), idle
   * connections close, the workers stop, and the storage flushes and closes. With `lockLost` (the lock on
   * the SQLite DATA_DIR was lost): no drain delay, the workers stopped and the listener closed at once,
   * and at most a second's grace.
   */
  stop(options?: { lockLost?: boolean }): Promise<void>;
}

/**
 * Starts an instance: on SQLite takes the server's lock on DATA_DIR (storage/server-lock.ts: throws
 * DataDirInUseError, nothing opened or written, while another server holds it), opens the storage (running
 * the migrations), checks its keys are the database's (storage/deployment-keys.ts: throws KeyMismatchError,
 * nothing written, if not), creates the first API key when there is none, builds the app, listens (the
 * metrics listener first), starts the background workers, then reports ready. The lock is released once
 * `stop()` has closed the storage, or when the start fails; while the server runs it is checked every
 * `lockCheckMs` (taken again if server.lock was removed; `onLockLost` if another server took it).
 */
export async function startRuntime(options: RuntimeOptions): Promise<Runtime> {
  // One server per SQLite DATA_DIR: two would each sequence and sign its log. Taken before the storage
  // opens (its migrations write); PostgreSQL is the database for several instances, and has no such lock.
  const lock = options.config.databaseUrl ? undefined : takeServerLock(options.config.dataDir);
  let runtime: Runtime;
  try {
    runtime = await startHoldingLock(options);
  } catch (error) {
    lock?.release();
    throw error;
  }
  let stopping: Promise<void> | undefined;
  const stop = (stopOptions?: { lockLost?: boolean }) => {
    clearInterval(watch);
    stopping ??= runtime.stop(stopOptions).finally(() => lock?.release());
    return stopping;
  };
  // A lock file removed or replaced while the server runs (a clean-up script, an operator) would let a
  // second server start: the lock is taken again on the file at the path, or, if another server holds
  // that one already, this one stops.
  const watch =
    lock &&
    setInterval(() => {
      try {
        if (lock.check() === 'retaken') {
          options.logger.error(
            'server.lock was removed or replaced while this server held it; it holds the new one',
            {
              dataDir: options.config.dataDir,
            },
          );
        }
      } catch (error) {
        options.logger.error('this server lost its lock on DATA_DIR and stops', {
          error: (error as Error).message,
        });
        // Stopping (which ends these checks) starts here, whoever is told: the caller's stop() then
        // finds it under way.
        void stop({ lockLost: true }).catch(() => undefined);
        options.onLockLost?.(error as Error);
      }
    }, options.lockCheckMs ?? LOCK_CHECK_MS);
  watch?.unref();
  return {
    url: runtime.url,
    server: runtime.server,
    metricsUrl: runtime.metricsUrl,
    lifecycle: runtime.lifecycle,
    stop,
  };
}

async function startHoldingLock(options: RuntimeOptions): Promise<Runtime> {
  const { config, logger } = options;
  const announce = options.announce ?? ((line: string) => console.log(line));
  const lifecycle = new InstanceLifecycle('starting');
  // Two steps of start-up that need nothing of each other run at once: the storage opens (on SQLite its
  // connection's thread starts and checks the migrations: a fifth of a start, nearly all of it on that
  // thread) while the event loop compiles the validator of every operation (a request per operation on a
  // loopback listener of its own), so no client's first request pays for it. In production the document
  // itself is not checked again: the build checked the one it ships (scripts/check-contract.ts).
  const opening = openStorage({ dataDir: config.dataDir, databaseUrl: config.databaseUrl });
  opening.catch(() => undefined); // awaited below, once the validators are compiled
  let contract: ReturnType<typeof loadContract>;
  let validation: ReturnType<typeof contractValidation>;
  try {
    contract = loadContract();
    validation = contractValidation(contract, {
      validateResponses: config.nodeEnv !== 'production',
      checkDocument: config.nodeEnv !== 'production',
    });
    await warmUpContractValidation(validation, contract);
  } catch (error) {
    // The warm-up's error is the one to report, whatever closing the storage says.
    await opening.then((storage) => storage.close()).catch(() => undefined);
    throw error;
  }
  const storage = await opening;
  const secretsKey = await loadSecretsKey({
    secretsKey: config.webhooks.secretsKey,
    dataDir: config.dataDir,
  }).catch(async (error: unknown) => {
    await storage.close();
    throw error;
  });
  // The signals between features (events committed → delivery workers, run created → run workers) are wired here.
  const features = wireFeatures(storage, {
    secret: secretsKey,
    backgroundShare: (config.runs.backgroundPercent ?? 50) / 100,
  });
  let metricsServer: MetricsServer | undefined;
  try {
    const logSigner = new NoteSigner(
      config.verifiableLog.keyName,
      await loadLogSigningKey({ signingKey: config.verifiableLog.signingKey, dataDir: config.dataDir }),
    );
    // Before anything is written: an instance whose keys are not the database's refuses to start.
    await checkDeploymentKeys(
      storage.db,
      {
        secretsKey,
        logVerifierKey: await logSigner.verifierKey(),
        logOrigin: config.verifiableLog.origin,
      },
      systemClock.now(),
    );
    if ((await features.keys.countActive()) === 0) {
      const { key } = await features.keys.create('default');
      announce(`Created an API key for tenant "default" (shown once): ${key}${localReceiverHint(config)}`);
    }
    const secretBox = new SecretBox(secretsKey);
    const metrics = createMetrics({
      storage,
      dataDir: config.dataDir,
      tenantStorageQuotaBytes: config.quota.tenantStorageQuotaBytes,
    });
    const workers = (options.workers ?? createWorkers)({
      features,
      config,
      secretBox,
      logger,
      clock: systemClock,
      metrics,
      logSigner,
    });
    const app = await createApp({
      features,
      contract,
      validation,
      config,
      logger,
      clock: systemClock,
      secretBox,
      workers,
      metrics,
      lifecycle,
      logSigner,
    });
    const { port: metricsPort, ...metricsListener } = config.metrics;
    if (metricsPort !== undefined) {
      metricsServer = await startMetricsServer(metrics, { ...metricsListener, port: metricsPort }, logger);
    }
    const server = createApiServer(app).listen(config.port, config.host);
    // A body must come within it, but an NDJSON run's upload, bounded by its size and an idle timeout.
    enforceBodyDeadline(server, REQUEST_TIMEOUT_MS);
    server.headersTimeout = REQUEST_TIMEOUT_MS;
    await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
    for (const worker of workers) worker.start();
    lifecycle.markRunning();
    const { port } = server.address() as AddressInfo;
    logger.info('started', {
      database: storage.location,
      port,
      metricsPort: metricsServer?.port,
      workers: workers.map((worker) => worker.name),
    });
    announce(
      `scenario-scoring listening on http://localhost:${port} — docs at http://localhost:${port}/docs`,
    );

    const stop = async (lockLost = false) => {
      const started = performance.now();
      lifecycle.markDraining();
      // With the lock lost, another server may be on this DATA_DIR: no drain delay, so the workers (the
      // log sequencer and signer among them) are told to stop and the listener closes at once, and the
      // requests in flight get a short grace.
      const drainDelayMs = lockLost ? 0 : config.shutdown.drainDelayMs;
      const graceMs = lockLost
        ? Math.min(config.shutdown.graceMs, LOCK_LOST_GRACE_MS)
        : config.shutdown.graceMs;
      if (lockLost) logger.info('stopping at once: the lock on DATA_DIR was lost', {});
      else logger.info('draining', { drainDelayMs });
      if (drainDelayMs > 0) await sleep(drainDelayMs);
      const [{ cut }] = await Promise.all([
        closeGracefully(server, graceMs),
        Promise.all(workers.map((worker) => worker.stop())),
      ]);
      if (cut) logger.error('requests still in flight were cut', { graceMs });
      await metricsServer?.close();
      await features.close();
      await storage.close();
      logger.info('stopped', { durationMs: Math.round(performance.now() - started) });
    };
    let stopping: Promise<void> | undefined;
    return {
      url: `http://127.0.0.1:${port}`,
      server,
      metricsUrl: metricsServer?.url,
      lifecycle,
      stop: (options) => {
        stopping ??= stop(options?.lockLost === true);
        return stopping;
      },
    };
  } catch (error) {
    await metricsServer?.close();
    await features.close();
    await storage.close();
    throw error;
  }
}
