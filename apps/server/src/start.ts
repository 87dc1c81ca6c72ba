import { ConfigError, loadConfig } from './config/server-config.js';
import { createLogger, describeError, jsonLogger, type Logger } from './logging/logger.js';
import { startRuntime } from './runtime.js';

/**
 * Starts the server from the environment (imported by main.ts once it has checked the Node version). On
 * SIGTERM or SIGINT it drains (see Runtime.stop) and exits 0; a second signal during the drain exits 1 at
 * once.
 */
export async function start(): Promise<void> {
  let logger: Logger = jsonLogger;
  try {
    const config = loadConfig();
    logger = createLogger(config.logs);
    const runtime = await startRuntime({ config, logger });
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) {
        logger.error('second signal: exiting without finishing the drain', { signal });
        process.exit(1);
      }
      stopping = true;
      logger.info('shutting down', { signal });
      runtime.stop().then(
        () => process.exit(0),
        (error: unknown) => {
          logger.error('the shutdown failed', { error: describeError(error) });
          process.exit(1);
        },
      );
    };
    for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => stop(signal));
  } catch (error) {
    // A bad environment is told in plain words, every bad variable at once.
    if (error instanceof ConfigError) console.error(error.message);
    else logger.error('the server failed to start', { error: describeError(error) });
    process.exit(1);
  }
}
