import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from './app.js';
import { type Clock, systemClock } from './clock.js';
import type { Config } from './config.js';
import { jsonLogger, type Logger } from './logger.js';
import { openStorage, type Storage } from './storage/storage.js';
import { loadSecretsKey, SecretBox } from './webhooks/secret-box.js';
import type { BackgroundWorker } from './workers/background-worker.js';
import { createWorkers, type WorkerDependencies } from './workers/create-workers.js';

/** Bounds a request's headers and body, so a client that sends them slowly cannot hold a connection. */
const REQUEST_TIMEOUT_MS = 30_000;
/** How long a shutdown waits for requests in flight before cutting their connections. */
const SHUTDOWN_GRACE_MS = 10_000;

/** What a runtime is started with; tests replace the clock, the logger or the workers. */
export interface RuntimeOptions {
  config: Config;
  logger?: Logger;
  clock?: Clock;
  /** Builds the background workers; by default every worker of the server. */
  workers?: (dependencies: WorkerDependencies) => BackgroundWorker[];
  /** Called with each line meant for the operator's terminal (the first key, where it listens). */
  announce?: (line: string) => void;
}

/** A running instance: storage, workers and the HTTP server. */
export interface Runtime {
  readonly port: number;
  readonly url: string;
  readonly storage: Storage;
  readonly workers: readonly BackgroundWorker[];
  readonly server: Server;
  /** Stops accepting, finishes requests in flight (bounded), stops the workers, closes the storage. */
  stop(): Promise<void>;
}

/**
 * Starts an instance: opens the storage (running the migrations), creates the first API key when there is
 * none, builds the app, listens, then starts the background workers.
 */
export async function startRuntime(options: RuntimeOptions): Promise<Runtime> {
  const { config } = options;
  const logger = options.logger ?? jsonLogger;
  const clock = options.clock ?? systemClock;
  const announce = options.announce ?? ((line: string) => console.log(line));
  const storage = await openStorage({ dataDir: config.dataDir, databaseUrl: config.databaseUrl });
  try {
    if ((await storage.countApiKeys()) === 0) {
      const { key } = await storage.createApiKey('default');
      announce(`Created an API key for tenant "default" (shown once): ${key}`);
    }
    const secretBox = new SecretBox(
      await loadSecretsKey({ secretsKey: config.webhooks.secretsKey, dataDir: config.dataDir }),
    );
    const workers = (options.workers ?? createWorkers)({ storage, config, secretBox, logger, clock });
    const app = await createApp({ storage, config, logger, clock, secretBox, workers });
    const server = app.listen(config.port, config.host);
    server.requestTimeout = REQUEST_TIMEOUT_MS;
    server.headersTimeout = REQUEST_TIMEOUT_MS;
    await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
    for (const worker of workers) worker.start();
    const { port } = server.address() as AddressInfo;
    announce(
      `scenario-scoring listening on http://localhost:${port} — docs at http://localhost:${port}/docs`,
    );

    let stopping: Promise<void> | undefined;
    const stop = async () => {
      const closed = new Promise((resolve) => server.close(resolve));
      server.closeIdleConnections();
      const force = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
      await closed;
      clearTimeout(force);
      await Promise.all(workers.map((worker) => worker.stop()));
      await storage.close();
    };
    return {
      port,
      url: `http://127.0.0.1:${port}`,
      storage,
      workers,
      server,
      stop: () => {
        stopping ??= stop();
        return stopping;
      },
    };
  } catch (error) {
    await storage.close();
    throw error;
  }
}
