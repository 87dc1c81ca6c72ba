import { EnvReader } from './config/env-reader.js';
import { type ErasureConfig, readErasureConfig } from './erasure/erasure-config.js';
import { type ForwardedHeader, isProxyRange } from './http/client-address.js';
import { type MetricsConfig, readMetricsConfig } from './metrics/metrics-config.js';
import { UNKNOWN_JURISDICTION_MODES, type UnknownJurisdictionMode } from './policies/scoring-policy.js';
import { type QuotaConfig, readQuotaConfig } from './quota/quota-config.js';
import { type LogConfig, readLogConfig } from './request-logging/request-logging-config.js';
import { type RunConfig, readRunConfig } from './runs/run-config.js';
import { readVerifiableLogConfig, type VerifiableLogConfig } from './verifiable-log/verifiable-log-config.js';
import { readWebhookConfig, type WebhookConfig } from './webhooks/webhook-config.js';

/** The server's settings, read from the environment only. */
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** A PostgreSQL URL; undefined means SQLite in `dataDir`. */
  databaseUrl: string | undefined;
  nodeEnv: 'development' | 'test' | 'production';
  bodyLimitBytes: number;
  /** Requests per second per API key; 0 disables the limit. */
  rateLimitPerSecond: number;
  /** CIDRs (or addresses) of the proxies whose forwarding header names the client (`TRUSTED_PROXIES`). */
  trustedProxies: string[];
  /** The header those proxies set (`TRUSTED_PROXY_HEADER`). */
  trustedProxyHeader: ForwardedHeader;
  /** Requests per second per client address without an API key (outside `/v1/`, probes excepted); 0 disables. */
  anonymousRateLimitPerSecond: number;
  /** The address clients reach the server at, shown by `/docs`; undefined: the contract's default. */
  publicBaseUrl: string | undefined;
  /** Webhook delivery and outbound safety. */
  webhooks: WebhookConfig;
  /** Log level and format. */
  logs: LogConfig;
  /** The Prometheus metrics listener. */
  metrics: MetricsConfig;
  /** How a SIGTERM or SIGINT stops the instance. */
  shutdown: ShutdownConfig;
  /** Batch scoring runs. */
  runs: RunConfig;
  /** The verifiable log of every tenant's records. */
  verifiableLog: VerifiableLogConfig;
  /** Erasure and retention (erasure/erasure-config.ts). */
  erasure: ErasureConfig;
  /** The per-tenant storage quota (`TENANT_STORAGE_QUOTA`). */
  quota: QuotaConfig;
  /**
   * What a scoring of a jurisdiction without a policy entry of its own does (`UNKNOWN_JURISDICTION`):
   * `default` scores it under the default policy (the answer says `policy_id: "default"`), `refuse` answers
   * 422 `unknown_jurisdiction`.
   */
  unknownJurisdiction: UnknownJurisdictionMode;
}

/** How the instance drains on SIGTERM or SIGINT. */
export interface ShutdownConfig {
  /** How long `/readyz` answers 503 `draining` while requests are still served, before the listener closes. */
  drainDelayMs: number;
  /** How long requests in flight may take to finish once the listener closed; then they are cut. */
  graceMs: number;
}

/** Thrown when the environment is invalid; the message names every bad variable. */
export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid configuration:\n- ${problems.join('\n- ')}`);
    this.name = 'ConfigError';
  }
}

const NODE_ENVS = ['development', 'test', 'production'] as const;
const FORWARDED_HEADERS = ['x-forwarded-for', 'forwarded'] as const;
const MAX_BODY_LIMIT_BYTES = 64 * 1024 * 1024;
const MAX_PORT = 65_535;

/**
 * Reads and validates the configuration: `PORT` (3000), `HOST` (0.0.0.0), `DATA_DIR` (./data),
 * `DATABASE_URL` (none: SQLite), `NODE_ENV` (production), `BODY_LIMIT_BYTES` (1 MiB),
 * `RATE_LIMIT_PER_SECOND` (1000; 0 disables), `ANONYMOUS_RATE_LIMIT_PER_SECOND` (20; 0 disables),
 * `PUBLIC_BASE_URL` (none), `TRUSTED_PROXIES` (none), `TRUSTED_PROXY_HEADER` (x-forwarded-for),
 * `SHUTDOWN_DRAIN_DELAY` (0s), `SHUTDOWN_GRACE` (10s), `UNKNOWN_JURISDICTION` (default), and
 * each area's own variables (`WEBHOOK_*`, `SECRETS_KEY`, `LOG_*`, `METRICS_*`, `RUN_*`, the log's `LOG_ORIGIN`, `LOG_SIGNING_KEY`…). Throws a
 * ConfigError naming every bad variable.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const reader = new EnvReader(env);
  const port = reader.integer('PORT', 3000, 0, MAX_PORT);
  const host = reader.text('HOST', '0.0.0.0');
  const dataDir = reader.text('DATA_DIR', './data');
  const databaseUrl = reader.raw('DATABASE_URL');
  const postgresUrl = databaseUrl !== undefined && /^postgres(ql)?:\/\//.test(databaseUrl);
  if (databaseUrl !== undefined && !postgresUrl) {
    reader.problems.push(
      'DATABASE_URL must be a postgres:// or postgresql:// URL (leave it unset for SQLite)',
    );
  }
  const nodeEnv = reader.choice('NODE_ENV', 'production', NODE_ENVS);
  const bodyLimitBytes = reader.integer('BODY_LIMIT_BYTES', 1_048_576, 1, MAX_BODY_LIMIT_BYTES);
  const rateLimitPerSecond = reader.integer('RATE_LIMIT_PER_SECOND', 1000, 0, 1_000_000);
  const trustedProxies = reader.list('TRUSTED_PROXIES', []);
  for (const cidr of trustedProxies) {
    if (!isProxyRange(cidr)) {
      reader.problems.push(
        `TRUSTED_PROXIES must be a comma-separated list of CIDRs or addresses such as 10.0.0.0/8 (got "${cidr}")`,
      );
    }
  }
  const trustedProxyHeader = reader.choice('TRUSTED_PROXY_HEADER', 'x-forwarded-for', FORWARDED_HEADERS);
  const anonymousRateLimitPerSecond = reader.integer('ANONYMOUS_RATE_LIMIT_PER_SECOND', 20, 0, 1_000_000);
  const publicBaseUrl = readPublicBaseUrl(reader);
  const webhooks = readWebhookConfig(reader, { nodeEnv, databaseUrl: postgresUrl ? databaseUrl : undefined });
  const logs = readLogConfig(reader, { nodeEnv });
  const metrics = readMetricsConfig(reader, { apiPort: port });
  const shutdown = {
    drainDelayMs: reader.durationMs('SHUTDOWN_DRAIN_DELAY', 0),
    graceMs: reader.durationMs('SHUTDOWN_GRACE', 10_000),
  };
  const runs = readRunConfig(reader);
  const erasure = readErasureConfig(reader);
  const quota = readQuotaConfig(reader);
  const unknownJurisdiction = reader.choice('UNKNOWN_JURISDICTION', 'default', UNKNOWN_JURISDICTION_MODES);
  const verifiableLog = readVerifiableLogConfig(reader, {
    databaseUrl: postgresUrl ? databaseUrl : undefined,
  });

  if (reader.problems.length > 0) throw new ConfigError(reader.problems);
  return {
    port,
    host,
    dataDir,
    databaseUrl,
    nodeEnv,
    bodyLimitBytes,
    rateLimitPerSecond,
    trustedProxies,
    trustedProxyHeader,
    anonymousRateLimitPerSecond,
    publicBaseUrl,
    webhooks,
    logs,
    metrics,
    shutdown,
    runs,
    verifiableLog,
    erasure,
    quota,
    unknownJurisdiction,
  };
}

/**
 * `PUBLIC_BASE_URL`: an http(s) URL with a host and at most a path (no credentials, query or fragment),
 * without its trailing slash. It is written into the docs page, so only plain URL characters are taken.
 */
function readPublicBaseUrl(reader: EnvReader): string | undefined {
  const text = reader.raw('PUBLIC_BASE_URL');
  if (text === undefined) return undefined;
  const problem =
    'PUBLIC_BASE_URL must be an http:// or https:// URL with a host and at most a path, such as https://scoring.example.com';
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    reader.problems.push(problem);
    return undefined;
  }
  const href = url.href.replace(/\/$/, '');
  if (
    (url.protocol !== 'http:' && url.protocol !== 'https:') ||
    url.username !== '' ||
    url.password !== '' ||
    url.search !== '' ||
    url.hash !== '' ||
    text.includes('?') ||
    text.includes('#') ||
    !/^https?:\/\/[A-Za-z0-9.:[\]-]+(?:\/[A-Za-z0-9._~:@%/+-]*)?$/.test(href)
  ) {
    reader.problems.push(problem);
    return undefined;
  }
  return href;
}
