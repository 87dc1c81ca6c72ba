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
    else {
      const plain = plainStartFailure(error);
      if (plain !== undefined) console.error(plain);
      else logger.error('the server failed to start', { error: describeError(error) });
    }
    process.exit(1);
  }
}

/**
 * What an operator can fix outside the server, said in plain words instead of a stack: its port taken or
 * forbidden, a PostgreSQL database that does not exist, a database nothing listens for. Undefined otherwise.
 */
export function plainStartFailure(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, syscall, address, port, message } = error as Record<string, unknown>;
  const where = address === undefined ? `port ${String(port)}` : `${String(address)} port ${String(port)}`;
  if (syscall === 'listen' && code === 'EADDRINUSE')
    return `Cannot listen on ${where}: another process is using it. Stop it, or start this server on another PORT (and HOST). Nothing was served.`;
  if (syscall === 'listen' && code === 'EACCES')
    return `Cannot listen on ${where}: this user may not open it (ports below 1024 need privileges). Use PORT=3000 or another port above 1023, behind a reverse proxy if it must answer on 80 or 443.`;
  // PostgreSQL's invalid_catalog_name: DATABASE_URL names a database the server has not got.
  if (code === '3D000')
    return `PostgreSQL says: ${String(message)}. Create it first (createdb, or CREATE DATABASE): the server makes its tables, not the database named in DATABASE_URL.`;
  if (code === '28P01' || code === '28000')
    return `PostgreSQL refused the login: ${String(message)}. Check the user and password in DATABASE_URL.`;
  if (
    (syscall === 'connect' || syscall === 'getaddrinfo') &&
    (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'ETIMEDOUT')
  )
    return `Cannot reach the database at ${String(address ?? (error as { hostname?: unknown }).hostname)}${port === undefined ? '' : ` port ${String(port)}`} (${String(code)}): is PostgreSQL running there, and is DATABASE_URL right?`;
  return undefined;
}
