import { createLogger, describeError, jsonLogger, type Logger } from './request-logging/logger.js';
import { type Runtime, startRuntime } from './runtime.js';
import { ConfigError, loadConfig } from './server-config.js';
import { KeyMismatchError } from './storage/deployment-keys.js';
import { DataDirInUseError, ServerLockError } from './storage/server-lock.js';
import { startTracing, stopTracing } from './tracing/tracing.js';

/**
 * Starts the server from the environment (imported by main.ts once it has checked the Node version). On
 * SIGTERM or SIGINT it drains (see Runtime.stop) and exits 0; a second signal during the drain exits 1 at
 * once. The handlers are installed before the start: a signal that comes while the server starts (it may
 * already listen, and answer) is kept, and the drain begins as soon as the start is done, rather than
 * Node's default action killing the process mid-start. `onSignals` subscribes the handler to SIGTERM and
 * SIGINT (main.ts's: its own listeners, installed before it loaded this module, which pass on the signals
 * they kept meanwhile).
 */
export async function start(onSignals: (handler: (signal: NodeJS.Signals) => void) => void): Promise<void> {
  let logger: Logger = jsonLogger;
  let runtime: Runtime | undefined;
  let stopping = false;
  // Set when the server stops because it lost its lock on DATA_DIR: the drain then exits 1.
  let lockLost = false;
  const drain = (started: Runtime) =>
    started.stop().then(
      () => stopTracing().finally(() => process.exit(lockLost ? 1 : 0)),
      (error: unknown) => {
        logger.error('the shutdown failed', { error: describeError(error) });
        process.exit(1);
      },
    );
  const stop = (signal: string) => {
    if (stopping) {
      logger.error('second signal: exiting without finishing the drain', { signal });
      process.exit(1);
    }
    stopping = true;
    logger.info('shutting down', { signal });
    if (runtime) drain(runtime);
  };
  onSignals(stop);
  try {
    const config = loadConfig();
    logger = createLogger(config.logs);
    await startTracing();
    runtime = await startRuntime({
      config,
      logger,
      onLockLost: (error) => {
        console.error(error.message);
        lockLost = true;
        if (!stopping) stop('lock lost');
      },
    });
    if (stopping) await drain(runtime);
  } catch (error) {
    // A bad environment, or a DATA_DIR another server holds (or whose lock file is not one), is told in plain words.
    if (
      error instanceof ConfigError ||
      error instanceof KeyMismatchError ||
      error instanceof DataDirInUseError ||
      error instanceof ServerLockError
    )
      console.error(error.message);
    else logger.error('the server failed to start', { error: describeError(error) });
    process.exit(1);
  }
}
