import { type DestinationStream, pino } from 'pino';
import pretty from 'pino-pretty';
import { type RequestLine, requestLineWriter } from './request-line.js';
import type { LogConfig } from './request-logging-config.js';
import { redactedPaths, scrubSecrets, scrubSecretsDeep } from './secret-scrubber.js';

/** Where the server writes what operators need to see: one JSON object per line (pino underneath). */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  /** The request log's line (see request-logging/request-line.ts); without it, `info`/`error('request', …)`. */
  request?(severity: 'info' | 'error', line: RequestLine): void;
}

/**
 * A logger backed by pino: JSON lines on stdout (`{"level":"info","time":…,"message":…,…fields}`), or
 * pino-pretty's readable lines when `format` is `pretty`. Authorization headers, secrets, keys, tokens
 * and bodies are redacted by field name, and any `sk_…` API key or `whsec_…` secret inside a string is
 * masked, so a careless field cannot leak one.
 *
 * JSON lines go to stdout asynchronously (pino's SonicBoom with `sync: false`), in writes of 4 KiB or
 * every 100 ms, whichever comes first: a busy server makes one `write` for a score of request lines
 * instead of one blocking `write` each, on the path of every request. The
 * buffer is flushed synchronously on exit (pino registers that for an asynchronous destination), so
 * `process.exit` after a last line, a failed start or a fatal error loses nothing; only kill -9 can drop
 * the lines of the write in flight. Pretty lines (development) and test destinations stay synchronous.
 */
export function createLogger(config: LogConfig, destination?: DestinationStream): Logger {
  // `destination` (tests) replaces stdout.
  const stream =
    config.format === 'pretty'
      ? pretty({
          sync: true,
          messageKey: 'message',
          translateTime: 'SYS:HH:MM:ss.l',
          ignore: 'pid,hostname',
          ...(destination && { destination, colorize: false }),
        })
      : (destination ?? pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: 100 }));
  const log = pino(
    {
      level: config.level,
      messageKey: 'message',
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: redactedPaths, censor: '[redacted]' },
      formatters: {
        level: (label) => ({ level: label }),
        log: (object) => scrubSecretsDeep(object) as Record<string, unknown>,
      },
    },
    stream,
  );
  return {
    info: (message, fields) => log.info(fields ?? {}, scrubSecrets(message)),
    error: (message, fields) => log.error(fields ?? {}, scrubSecrets(message)),
    request: requestLineWriter(config.level, stream),
  };
}

/** The default logger: JSON lines on stdout at level info. */
export const jsonLogger: Logger = createLogger({ level: 'info', format: 'json' });

/** A logger that drops everything, for tests that provoke errors on purpose. */
export const silentLogger: Logger = { info() {}, error() {} };

/**
 * An error's name, message, stack and cause, as plain data for a log line (never for a response). Secrets
 * in them are masked by the logger, which scrubs every string field of a line.
 */
export function describeError(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { value: String(error) };
  const described: Record<string, unknown> = {
    name: error.name,
    message: error.message,
    stack: error.stack,
  };
  const extra = error as { errors?: unknown; cause?: unknown };
  if (extra.errors !== undefined) described.errors = extra.errors;
  if (extra.cause !== undefined) described.cause = describeError(extra.cause);
  return described;
}
