import type { AddressInfo } from 'node:net';
import { createApp } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import { describeError, jsonLogger } from './logger.js';
import { openStorage } from './storage/storage.js';

/** Bounds a request's headers and body, so a client that sends them slowly cannot hold a connection. */
const REQUEST_TIMEOUT_MS = 30_000;
/** How long a shutdown waits for requests in flight before cutting their connections. */
const SHUTDOWN_GRACE_MS = 10_000;

/**
 * Starts the server: reads the configuration, opens the storage (creating the first API key when there is
 * none), listens, and on SIGTERM or SIGINT stops accepting, finishes requests in flight, closes the
 * storage and exits 0.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const storage = await openStorage({ dataDir: config.dataDir, databaseUrl: config.databaseUrl });
  if ((await storage.countApiKeys()) === 0) {
    const { key } = await storage.createApiKey('default');
    console.log(`Created an API key for tenant "default" (shown once): ${key}`);
  }
  const app = await createApp({ storage, config });
  const server = app.listen(config.port, config.host);
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  server.headersTimeout = REQUEST_TIMEOUT_MS;
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  const { port } = server.address() as AddressInfo;
  console.log(
    `scenario-scoring listening on http://localhost:${port} — docs at http://localhost:${port}/docs`,
  );

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    jsonLogger.info('shutting down', { signal });
    const closed = new Promise((resolve) => server.close(resolve));
    server.closeIdleConnections();
    const force = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
    await closed;
    clearTimeout(force);
    await storage.close();
    process.exit(0);
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => void stop(signal));
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) console.error(error.message);
  else jsonLogger.error('the server failed to start', { error: describeError(error) });
  process.exit(1);
});
