import { type DestinationStream, pino } from 'pino';
import type { LogLevel } from './log-config.js';
import { scrubSecrets } from './secret-scrubber.js';

/** The fields of the one line the request log writes per request: known names, primitive values only. */
export interface RequestLine {
  requestId: string;
  tenant?: string;
  operation?: string;
  method: string;
  status: number;
  durationMs: number;
  /** Present when the client went away before the response ended. */
  aborted?: true;
}

/**
 * Writes request lines to `stream` in the logger's format, without the generic line's redaction and deep
 * scrub: none of these names is a redacted path, and of the values only the request id (which a client may
 * choose) and the tenant are free text, so only they are scrubbed. The generic path cost about twice as
 * much per line, and this line is written for every request.
 */
export function requestLineWriter(
  level: LogLevel,
  stream: DestinationStream,
): (severity: 'info' | 'error', line: RequestLine) => void {
  const log = pino(
    {
      level,
      messageKey: 'message',
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    stream,
  );
  return (severity, line) => {
    const fields = {
      ...line,
      requestId: scrubSecrets(line.requestId),
      ...(line.tenant !== undefined && { tenant: scrubSecrets(line.tenant) }),
    };
    if (severity === 'error') log.error(fields, 'request');
    else log.info(fields, 'request');
  };
}
