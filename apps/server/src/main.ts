import { ConfigError, loadConfig } from './config.js';
import { describeError, jsonLogger } from './logger.js';
import { startRuntime } from './runtime.js';

/**
 * Starts the server from the environment, and on SIGTERM or SIGINT stops accepting, finishes requests in
 * flight, stops the workers, closes the storage and exits 0.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const runtime = await startRuntime({ config });
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    jsonLogger.info('shutting down', { signal });
    await runtime.stop();
    process.exit(0);
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => void stop(signal));
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) console.error(error.message);
  else jsonLogger.error('the server failed to start', { error: describeError(error) });
  process.exit(1);
});
