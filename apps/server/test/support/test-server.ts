import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { NoteSigner } from '@scenario-scoring/tlog';
import { type AppOptions, createApp } from '../../src/app.js';
import type { Clock } from '../../src/common/clock.js';
import { type Contract, loadContract } from '../../src/common/contract.js';
import type { Features } from '../../src/features.js';
import type { InstanceLifecycle } from '../../src/health/instance-lifecycle.js';
import { contractValidation, warmUpContractValidation } from '../../src/http/contract-validation.js';
import type { Metrics } from '../../src/metrics/metrics.js';
import { type Logger, silentLogger } from '../../src/request-logging/logger.js';
import { type Config, loadConfig } from '../../src/server-config.js';
import type { Storage } from '../../src/storage/storage.js';
import { createApiServer } from '../../src/transport/api-server.js';
import { enforceBodyDeadline } from '../../src/transport/body-deadline.js';
import { SecretBox } from '../../src/webhooks/outbound/secret-box.js';
import type { BackgroundWorker } from '../../src/workers/background-worker.js';
import { testFeatures } from './test-features.js';

/** What testConfig reads: every other variable keeps its default. */
const TEST_ENV: NodeJS.ProcessEnv = {
  NODE_ENV: 'test',
  PORT: '0',
  HOST: '127.0.0.1',
  DATA_DIR: '/nonexistent',
  RATE_LIMIT_PER_SECOND: '0',
  ANONYMOUS_RATE_LIMIT_PER_SECOND: '0',
  WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32,::1/128',
  WEBHOOK_RETRY_SCHEDULE: '10ms,20ms,40ms',
  WEBHOOK_THROTTLED_MIN_DELAY: '10ms',
  WEBHOOK_POLL_INTERVAL: '50ms',
  METRICS_HOST: '127.0.0.1',
  RUN_POLL_INTERVAL: '50ms',
  RUN_STORAGE_RETRY_BACKOFF: '1ms',
  RUN_SCORING_THREADS: '0',
  // Erasures start at once: no scoring is in flight in these tests unless one says so (erasure-settle.test.ts).
  ERASURE_SETTLE: '0s',
};

/**
 * The configuration tests run with: validation of responses on, no rate limits unless asked; webhooks go
 * to receivers on 127.0.0.1 on a compressed schedule; scoring threads off, because they run the built
 * thread script and the TypeScript sources score in process.
 */
export function testConfig(overrides: Partial<Config> = {}): Config {
  return { ...loadConfig(TEST_ENV), ...overrides };
}

/** A request to the test server: JSON bodies are serialised, `key` becomes a bearer token. */
export interface TestRequest {
  method?: string;
  key?: string;
  /** Sent as JSON unless it is a string, which is sent as is; either way as application/json unless `headers` say otherwise. */
  body?: unknown;
  headers?: Record<string, string>;
}

/** An app listening on 127.0.0.1 on a free port, with a `fetch` bound to it. */
export interface TestServer {
  readonly url: string;
  request(path: string, request?: TestRequest): Promise<Response>;
  close(): Promise<void>;
}

/** Starts `createApp` on a free port: real HTTP, real storage. */
/**
 * The bundled contract, loaded once per worker process (the files of src/ share their worker's modules, see
 * vitest.config.ts), as the runtime loads it once per process.
 */
let bundledContract: Contract | undefined;
function defaultContract(): Contract {
  bundledContract ??= loadContract();
  return bundledContract;
}

/**
 * The contract validator, built and warmed up once per contract and mode in a worker process, as the
 * runtime does once per process: checking the document and compiling every operation's schemas takes
 * seconds of CPU, and suites start dozens of servers. Its handlers keep no state of one app's.
 */
const warmed = new WeakMap<Contract, Map<boolean, Promise<ReturnType<typeof contractValidation>>>>();
function warmedValidation(
  contract: Contract,
  strict: boolean,
): Promise<ReturnType<typeof contractValidation>> {
  let byMode = warmed.get(contract);
  if (byMode === undefined) {
    byMode = new Map();
    warmed.set(contract, byMode);
  }
  let validation = byMode.get(strict);
  if (validation === undefined) {
    const handlers = contractValidation(contract, { validateResponses: strict, checkDocument: strict });
    validation = warmUpContractValidation(handlers, contract).then(() => handlers);
    byMode.set(strict, validation);
  }
  return validation;
}

export async function startTestServer(options: {
  storage: Storage;
  /** The features to serve; by default the ones wired once on `storage` (testFeatures). */
  features?: Features;
  config?: Partial<Config>;
  logger?: Logger;
  clock?: Clock;
  secretBox?: SecretBox;
  workers?: readonly BackgroundWorker[];
  metrics?: Metrics;
  lifecycle?: InstanceLifecycle;
  /** The contract to serve and enforce (a test-only variant, say); by default the bundled one. */
  contract?: Contract;
  /** Signs the tenants' log checkpoints; by default a fresh key. */
  logSigner?: NoteSigner;
  /** Counts the published files' builds (see AppOptions.onDocsPrepare). */
  onDocsPrepare?: AppOptions['onDocsPrepare'];
  /** Node's request timeout (30 s in the runtime), checked every 50 ms instead of Node's 30 s. */
  requestTimeoutMs?: number;
}): Promise<TestServer> {
  // Warmed up as the runtime does before it listens, so tests see the same first-request behaviour.
  const config = testConfig(options.config);
  const contract = options.contract ?? defaultContract();
  const validation = await warmedValidation(contract, config.nodeEnv !== 'production');
  const app = await createApp({
    contract,
    validation,
    features: options.features ?? testFeatures(options.storage),
    config,
    logger: options.logger ?? silentLogger,
    secretBox: options.secretBox ?? new SecretBox(randomBytes(32)),
    ...(options.clock && { clock: options.clock }),
    ...(options.workers && { workers: options.workers }),
    ...(options.metrics && { metrics: options.metrics }),
    ...(options.lifecycle && { lifecycle: options.lifecycle }),
    ...(options.logSigner && { logSigner: options.logSigner }),
    ...(options.onDocsPrepare && { onDocsPrepare: options.onDocsPrepare }),
  });
  // As the runtime listens (createApiServer).
  const server: Server = createApiServer(
    app,
    options.requestTimeoutMs === undefined ? {} : { connectionsCheckingInterval: 50 },
  ).listen(0, '127.0.0.1');
  if (options.requestTimeoutMs !== undefined) {
    enforceBodyDeadline(server, options.requestTimeoutMs);
    server.headersTimeout = options.requestTimeoutMs;
  }
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    request(path, { method, key, body, headers = {} } = {}) {
      const allHeaders: Record<string, string> = { ...headers };
      if (key !== undefined) allHeaders.authorization = `Bearer ${key}`;
      if (body !== undefined) allHeaders['content-type'] ??= 'application/json';
      return fetch(`${url}${path}`, {
        method: method ?? (body === undefined ? 'GET' : 'POST'),
        headers: allHeaders,
        ...(body !== undefined && { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      });
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
