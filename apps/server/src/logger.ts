/** Where the server writes what operators need to see: one JSON object per line. */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** A logger writing JSON lines, info to stdout and errors to stderr. */
export const jsonLogger: Logger = {
  info(message, fields) {
    process.stdout.write(
      `${JSON.stringify({ level: 'info', time: new Date().toISOString(), message, ...fields })}\n`,
    );
  },
  error(message, fields) {
    process.stderr.write(
      `${JSON.stringify({ level: 'error', time: new Date().toISOString(), message, ...fields })}\n`,
    );
  },
};

/** A logger that drops everything, for tests that provoke errors on purpose. */
export const silentLogger: Logger = { info() {}, error() {} };

/** An error's name, message, stack and cause, as plain data for a log line (never for a response). */
export function describeError(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { value: String(error) };
  const described: Record<string, unknown> = { name: error.name, message: error.message, stack: error.stack };
  const extra = error as { errors?: unknown; cause?: unknown };
  if (extra.errors !== undefined) described.errors = extra.errors;
  if (extra.cause !== undefined) described.cause = describeError(extra.cause);
  return described;
}
