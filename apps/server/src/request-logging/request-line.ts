import { hostname } from 'node:os';
import type { DestinationStream } from 'pino';
import { LOG_LEVELS, type LogLevel } from './request-logging-config.js';
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
  /** How many lines like this one (refused before a key was found) were left out since the last one written. */
  suppressed?: number;
  /** The request's trace and span ids, when tracing is on. */
  traceId?: string;
  spanId?: string;
}

/**
 * Writes request lines to `stream` byte for byte as the logger's pino would (`{"level":…,"time":…,"pid":…,
 * "hostname":…,` the fields in order, `"message":"request"}`: tested against pino; but a lone surrogate,
 * which pino writes raw in a short string, is escaped, as JSON.stringify does), written out
 * directly: the line has known names and primitive values, so pino's generic path (a merged object,
 * its key loop, redaction, a Date per line) is not needed. Of the values only the request id (which a
 * client may choose) and the tenant are free text, and only they are scrubbed. This line is written for
 * every request, so its cost is every request's (the time is formatted once per millisecond).
 */
export function requestLineWriter(
  level: LogLevel,
  stream: DestinationStream,
): (severity: 'info' | 'error', line: RequestLine) => void {
  const threshold = LOG_LEVELS.indexOf(level);
  const written = {
    info: LOG_LEVELS.indexOf('info') >= threshold,
    error: LOG_LEVELS.indexOf('error') >= threshold,
  };
  const bindings = `,"pid":${process.pid},"hostname":${JSON.stringify(hostname())}`;
  let millisecond = -1;
  let time = '';
  return (severity, line) => {
    if (!written[severity]) return;
    const now = Date.now();
    if (now !== millisecond) {
      millisecond = now;
      time = `,"time":"${new Date(now).toISOString()}"`;
    }
    let json = `{"level":"${severity}"${time}${bindings},"requestId":${JSON.stringify(scrubSecrets(line.requestId))}`;
    if (line.tenant !== undefined) json += `,"tenant":${JSON.stringify(scrubSecrets(line.tenant))}`;
    if (line.operation !== undefined) json += `,"operation":${JSON.stringify(line.operation)}`;
    json += `,"method":${JSON.stringify(line.method)},"status":${finite(line.status)},"durationMs":${finite(line.durationMs)}`;
    if (line.aborted) json += ',"aborted":true';
    if (line.suppressed !== undefined) json += `,"suppressed":${finite(line.suppressed)}`;
    // Hex ids made by the tracer, never a client's text: written as they are.
    if (line.traceId !== undefined) json += `,"trace_id":"${line.traceId}","span_id":"${line.spanId}"`;
    stream.write(`${json},"message":"request"}\n`);
  };
}

/** A number as pino writes it: JSON's form, null when not finite. */
function finite(value: number): string {
  return Number.isFinite(value) ? String(value) : 'null';
}
