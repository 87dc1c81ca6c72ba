import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from './app.js';
import type { Clock } from './clock.js';
import { EnvReader } from './config/env-reader.js';
import type { Config } from './config.js';
import type { InstanceLifecycle } from './health/instance-lifecycle.js';
import { type Logger, silentLogger } from './logger.js';
import type { Metrics } from './metrics/metrics.js';
import { readRunConfig } from './runs/run-config.js';
import type { Storage } from './storage/storage.js';
import { SecretBox } from './webhooks/secret-box.js';
import { readWebhookConfig } from './webhooks/webhook-config.js';
import type { BackgroundWorker } from './workers/background-worker.js';

/** The configuration tests run with: validation of responses on, no rate limit unless asked. */
export function testConfig(overrides: Partial<Config> = {}): Config {
  return {
    port: 0,
    host: '127.0.0.1',
    dataDir: '/nonexistent',
    databaseUrl: undefined,
    nodeEnv: 'test',
    bodyLimitBytes: 1_048_576,
    rateLimitPerSecond: 0,
    // Tests deliver to receivers on 127.0.0.1, with the schedule compressed.
    webhooks: {
      ...readWebhookConfig(new EnvReader({}), { nodeEnv: 'test', databaseUrl: undefined }),
      allowedCidrs: ['127.0.0.1/32', '::1/128'],
      retryScheduleMs: [10, 20, 40],
      throttledMinDelayMs: 10,
      pollIntervalMs: 50,
    },
    logs: { level: 'info', format: 'json' },
    metrics: { port: undefined, host: '127.0.0.1', token: undefined },
    shutdown: { drainDelayMs: 0, graceMs: 10_000 },
    // Scoring threads run the built thread script; the TypeScript sources score in process.
    runs: {
      ...readRunConfig(new EnvReader({})),
      pollIntervalMs: 50,
      storageRetryBackoffMs: 1,
      scoringThreads: 0,
    },
    ...overrides,
  };
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
export async function startTestServer(options: {
  storage: Storage;
  config?: Partial<Config>;
  logger?: Logger;
  clock?: Clock;
  secretBox?: SecretBox;
  workers?: readonly BackgroundWorker[];
  metrics?: Metrics;
  lifecycle?: InstanceLifecycle;
}): Promise<TestServer> {
  const app = await createApp({
    storage: options.storage,
    config: testConfig(options.config),
    logger: options.logger ?? silentLogger,
    secretBox: options.secretBox ?? new SecretBox(randomBytes(32)),
    ...(options.clock && { clock: options.clock }),
    ...(options.workers && { workers: options.workers }),
    ...(options.metrics && { metrics: options.metrics }),
    ...(options.lifecycle && { lifecycle: options.lifecycle }),
  });
  const server: Server = app.listen(0, '127.0.0.1');
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
