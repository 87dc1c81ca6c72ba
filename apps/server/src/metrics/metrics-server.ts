import { timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describeError, type Logger } from '../request-logging/logger.js';
import type { Metrics } from './metrics.js';
import type { MetricsConfig } from './metrics-config.js';

/** The metrics listener of an instance. */
export interface MetricsServer {
  readonly port: number;
  /** `http://127.0.0.1:<port>/metrics`, for tests and the start-up log. */
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Serves `GET /metrics` (Prometheus text format) on its own listener, apart from the API: the load
 * balancer never routes to it, Prometheus scrapes each instance on it. With a token, a scrape must
 * send `Authorization: Bearer <token>`; anything else answers 401. Every other path answers 404.
 */
export async function startMetricsServer(
  metrics: Pick<Metrics, 'registry'>,
  config: Omit<MetricsConfig, 'port'> & { port: number },
  logger: Logger,
): Promise<MetricsServer> {
  const expected = config.token === undefined ? undefined : Buffer.from(`Bearer ${config.token}`);
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found: scrape GET /metrics\n');
      return;
    }
    if (expected !== undefined && !sameBytes(Buffer.from(req.headers.authorization ?? ''), expected)) {
      res
        .writeHead(401, { 'content-type': 'text/plain', 'www-authenticate': 'Bearer realm="metrics"' })
        .end('Send Authorization: Bearer <METRICS_TOKEN>\n');
      return;
    }
    metrics.registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      (error: unknown) => {
        logger.error('metrics scrape failed', { error: describeError(error) });
        res.writeHead(500, { 'content-type': 'text/plain' }).end('The scrape failed; see the log.\n');
      },
    );
  });
  server.listen(config.port, config.host);
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: `http://127.0.0.1:${port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function sameBytes(actual: Buffer, expected: Buffer): boolean {
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
