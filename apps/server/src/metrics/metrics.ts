import { statfs } from 'node:fs/promises';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Storage } from '../storage/storage.js';
import { DATABASE_GAUGES, tenantStorageGauges } from './database-gauges.js';

/** Every metric name starts with this, so a shared Prometheus tells the service's series apart. */
export const METRIC_PREFIX = 'scenario_scoring_';

/**
 * The request-duration buckets the OpenTelemetry HTTP semantic conventions recommend for
 * `http.server.request.duration`, in seconds.
 */
const HTTP_DURATION_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];

/** The labels of the request histogram: the OpenTelemetry attributes in their Prometheus form. */
export type HttpRequestLabel = 'http_request_method' | 'http_route' | 'http_response_status_code';
/** Delivery-lag buckets in seconds: from "at once" to "the workers are far behind". */
const DELIVERY_LAG_BUCKETS_S = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];

/**
 * The instance's Prometheus metrics, in a registry of its own (never prom-client's global one, so several
 * apps in one test process do not collide). Other code calls the instruments; the database gauges are
 * read at scrape time.
 */
export interface Metrics {
  readonly registry: Registry;
  /**
   * Seconds per HTTP request: OpenTelemetry's `http.server.request.duration` in its Prometheus form
   * (`http_server_request_duration_seconds`, without the service prefix, so standard RED dashboards find it),
   * by method, route template of the contract (`/v1/logs/{cid}`; empty when the request matched no
   * operation) and status code.
   */
  readonly httpRequestDuration: Histogram<HttpRequestLabel>;
  /** Synchronous scorings (POST /v1/scoring/score), each logged under its CID; batch runs are not counted. */
  readonly scores: Counter;
  /**
   * Webhook delivery attempts by `result`: `succeeded` (a 2xx), `failed` (another status), `network_error`,
   * `timeout`. The delivery worker calls `deliveryAttempts.inc({ result })`.
   */
  readonly deliveryAttempts: Counter<'result'>;
  /**
   * Seconds from when a delivery attempt was due (its event was created, or its retry came due) until it
   * started: how far the delivery workers lag. The worker calls `deliveryLagSeconds.observe(seconds)`.
   */
  readonly deliveryLagSeconds: Histogram;
  /**
   * Batches the log sequencer refused to sign because a tenant's stored hashes did not recompute its last
   * signed checkpoint (verifiable-log/log-self-check.ts), by this instance since it started. The open
   * faults themselves, database-wide and across restarts, are the gauge `scenario_scoring_log_faults`.
   */
  readonly logSelfCheckFailures: Counter;
}

/** What the metrics are built from: the storage whose tables the scrape-time gauges count. */
export interface MetricsOptions {
  /** Without it, no database gauge is registered (tests of the HTTP metrics alone). */
  storage?: Pick<Storage, 'db'>;
  /** The data directory whose filesystem's size and free space are reported (DATA_DIR). */
  dataDir?: string;
  /** Whether to collect Node's process metrics (memory, CPU, event-loop lag, GC); default true. */
  processMetrics?: boolean;
  /** The per-tenant storage quota the quota gauge reports (0: none). */
  tenantStorageQuotaBytes?: number;
}

/** Creates the registry and every instrument. */
export function createMetrics(options: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  const registers = [registry];
  if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry });
  if (options.storage !== undefined) {
    const { db } = options.storage;
    for (const gauge of [...DATABASE_GAUGES, ...tenantStorageGauges(options.tenantStorageQuotaBytes ?? 0)]) {
      new Gauge({
        name: gauge.name,
        help: gauge.help,
        labelNames: gauge.labelNames,
        registers,
        async collect() {
          this.reset();
          // A scrape while the database is down reports the gauge empty rather than failing whole.
          const samples = await gauge.read(db).catch(() => []);
          for (const { labels, value } of samples) this.set(labels, value);
        },
      });
    }
  }
  if (options.dataDir !== undefined) {
    const { dataDir } = options;
    for (const [name, help, read] of [
      [
        'avail_bytes',
        'Bytes available to the server on the filesystem of DATA_DIR.',
        (stats: { bavail: number; bsize: number }) => stats.bavail * stats.bsize,
      ],
      [
        'size_bytes',
        'Size in bytes of the filesystem of DATA_DIR.',
        (stats: { blocks: number; bsize: number }) => stats.blocks * stats.bsize,
      ],
    ] as const) {
      new Gauge({
        name: `${METRIC_PREFIX}data_dir_filesystem_${name}`,
        help,
        registers,
        async collect() {
          this.reset();
          const stats = await statfs(dataDir).catch(() => undefined);
          if (stats !== undefined) this.set(read(stats));
        },
      });
    }
  }
  return {
    registry,
    httpRequestDuration: new Histogram({
      name: 'http_server_request_duration_seconds',
      help: 'Duration of HTTP server requests (OpenTelemetry http.server.request.duration), by method, route template and status code.',
      labelNames: ['http_request_method', 'http_route', 'http_response_status_code'],
      buckets: HTTP_DURATION_BUCKETS_S,
      registers,
    }),
    scores: new Counter({
      name: `${METRIC_PREFIX}scores_total`,
      help: 'Synchronous scorings (POST /v1/scoring/score).',
      registers,
    }),
    deliveryAttempts: new Counter({
      name: `${METRIC_PREFIX}webhook_delivery_attempts_total`,
      help: 'Webhook delivery attempts, by result (succeeded, failed, network_error, timeout).',
      labelNames: ['result'],
      registers,
    }),
    logSelfCheckFailures: new Counter({
      name: `${METRIC_PREFIX}log_self_check_failures_total`,
      help: 'Log batches refused before signing: the stored hashes did not recompute the last signed checkpoint.',
      registers,
    }),
    deliveryLagSeconds: new Histogram({
      name: `${METRIC_PREFIX}webhook_delivery_lag_seconds`,
      help: 'Seconds from when a delivery attempt was due until it started.',
      buckets: DELIVERY_LAG_BUCKETS_S,
      registers,
    }),
  };
}
