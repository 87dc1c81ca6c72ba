import type { EnvReader } from '../config/env-reader.js';

/** Where Prometheus scrapes `/metrics`: a listener of its own, apart from the API's port. */
export interface MetricsConfig {
  /** The metrics listener's port; undefined means no metrics listener (0 picks a free port). */
  port: number | undefined;
  /** The address the metrics listener binds. */
  host: string;
  /** When set, a scrape must send `Authorization: Bearer <token>`. */
  token: string | undefined;
}

const MAX_PORT = 65_535;
const MIN_TOKEN_CHARS = 16;

/**
 * Reads `METRICS_PORT` (unset: no metrics listener), `METRICS_HOST` (0.0.0.0) and `METRICS_TOKEN`
 * (optional bearer token). The metrics listener is separate so the load balancer never routes to it.
 */
export function readMetricsConfig(reader: EnvReader, context: { apiPort: number }): MetricsConfig {
  const port =
    reader.raw('METRICS_PORT') === undefined ? undefined : reader.integer('METRICS_PORT', 0, 0, MAX_PORT);
  if (port !== undefined && port !== 0 && port === context.apiPort) {
    reader.problems.push(`METRICS_PORT must differ from PORT (both are ${port})`);
  }
  const host = reader.text('METRICS_HOST', '0.0.0.0');
  const token = reader.raw('METRICS_TOKEN');
  if (token !== undefined && token.length < MIN_TOKEN_CHARS) {
    reader.problems.push(
      `METRICS_TOKEN must be at least ${MIN_TOKEN_CHARS} characters (openssl rand -hex 32)`,
    );
  }
  if (token !== undefined && port === undefined) {
    reader.problems.push('METRICS_TOKEN is set but METRICS_PORT is not: set METRICS_PORT to serve /metrics');
  }
  return { port, host, token };
}
