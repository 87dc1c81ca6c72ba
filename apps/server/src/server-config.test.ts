import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './server-config.js';
import { DEFAULT_RETRY_SCHEDULE_MS } from './webhooks/webhook-config.js';

const KEY = Buffer.alloc(32, 7).toString('base64');

describe('loadConfig', () => {
  it('applies the defaults to an empty environment', () => {
    expect(loadConfig({})).toEqual({
      port: 3000,
      host: '0.0.0.0',
      dataDir: './data',
      databaseUrl: undefined,
      erasure: {
        retention: undefined,
        batchSize: 500,
        leaseMs: 60_000,
        settleMs: 30_000,
        compactIntervalMs: 5000,
        maxPendingPerTenant: 100,
        pollIntervalMs: 1000,
        retentionCheckIntervalMs: 3_600_000,
      },
      nodeEnv: 'production',
      bodyLimitBytes: 1_048_576,
      rateLimitPerSecond: 1000,
      trustedProxies: [],
      trustedProxyHeader: 'x-forwarded-for',
      anonymousRateLimitPerSecond: 20,
      publicBaseUrl: undefined,
      quota: { tenantStorageQuotaBytes: 10_000_000_000, usageRefreshMs: 1000 },
      webhooks: {
        allowedCidrs: [],
        allowHttp: false,
        retryScheduleMs: DEFAULT_RETRY_SCHEDULE_MS,
        retryJitter: 0.2,
        throttledMinDelayMs: 60_000,
        timeoutMs: 15_000,
        disableAfterFailingMs: 5 * 86_400_000,
        leaseMs: 60_000,
        pollIntervalMs: 200,
        concurrency: 64,
        tenantConcurrency: 32,
        breakerThreshold: 5,
        breakerCooldownMs: 30_000,
        maxWebhooksPerTenant: 50,
        maxDeliveriesPerEvent: 50,
        secretsKey: undefined,
      },
      logs: { level: 'info', format: 'json' },
      metrics: { port: undefined, host: '0.0.0.0', token: undefined },
      shutdown: { drainDelayMs: 0, graceMs: 10_000 },
      runs: {
        batchSize: 500,
        pollIntervalMs: 1000,
        leaseMs: 30_000,
        concurrency: 4,
        storageRetries: 5,
        storageRetryBackoffMs: 100,
        scoringThreads: expect.any(Number),
        maxClaims: 10,
        backgroundPercent: 50,
        maxPendingItems: 10_000_000,
        upload: {
          maxBytes: 1_073_741_824,
          maxLines: 5_000_000,
          maxLineBytes: 65_536,
          idleTimeoutMs: 30_000,
          leaseMs: 120_000,
          maxUploadsPerTenant: 2,
          maxDurationMs: 3_600_000,
        },
      },
      verifiableLog: {
        origin: 'localhost/scenario-scoring',
        keyName: 'localhost/scenario-scoring',
        signingKey: undefined,
        checkpointIntervalMs: 1000,
        maxBatch: 4096,
        inclusionMaxWaitMs: 5000,
        inclusionMaxWaiters: 100,
        witnessPolicy: undefined,
        witnessMode: 'fail-open',
        witnessTimeoutMs: 5000,
      },
      unknownJurisdiction: 'default',
    });
  });

  it('reads UNKNOWN_JURISDICTION (default or refuse) and names a bad value', () => {
    expect(loadConfig({ UNKNOWN_JURISDICTION: 'refuse' }).unknownJurisdiction).toBe('refuse');
    expect(() => loadConfig({ UNKNOWN_JURISDICTION: 'score' })).toThrow(
      /UNKNOWN_JURISDICTION must be one of default, refuse/,
    );
  });

  it('reads the log, metrics and shutdown variables; development logs pretty', () => {
    expect(
      loadConfig({
        NODE_ENV: 'development',
        LOG_LEVEL: 'debug',
        METRICS_PORT: '9464',
        METRICS_HOST: '127.0.0.1',
        METRICS_TOKEN: 'a-long-enough-scrape-token',
        SHUTDOWN_DRAIN_DELAY: '5s',
        SHUTDOWN_GRACE: '30s',
      }),
    ).toMatchObject({
      logs: { level: 'debug', format: 'pretty' },
      metrics: { port: 9464, host: '127.0.0.1', token: 'a-long-enough-scrape-token' },
      shutdown: { drainDelayMs: 5000, graceMs: 30_000 },
    });
    expect(loadConfig({ NODE_ENV: 'development', LOG_FORMAT: 'json' }).logs.format).toBe('json');
  });

  it('refuses a bad log, metrics or shutdown variable, naming each', () => {
    expect(() =>
      loadConfig({
        LOG_LEVEL: 'verbose',
        LOG_FORMAT: 'xml',
        PORT: '8080',
        METRICS_PORT: '8080',
        METRICS_TOKEN: 'short',
        SHUTDOWN_GRACE: 'forever',
      }),
    ).toThrow(
      new ConfigError([
        'LOG_LEVEL must be one of debug, info, warn, error, silent (got "verbose")',
        'LOG_FORMAT must be one of json, pretty (got "xml")',
        'METRICS_PORT must differ from PORT (both are 8080)',
        'METRICS_TOKEN must be at least 16 characters (openssl rand -hex 32)',
        'SHUTDOWN_GRACE must be a duration such as 500ms, 5s, 5m, 2h or 1d, at least 0 ms (got "forever")',
      ]),
    );
    expect(() => loadConfig({ METRICS_TOKEN: 'a-long-enough-scrape-token' })).toThrow(
      /METRICS_TOKEN is set but METRICS_PORT is not/,
    );
  });

  it('reads every variable', () => {
    expect(
      loadConfig({
        PORT: '0',
        HOST: '127.0.0.1',
        DATA_DIR: '/var/lib/scenario-scoring',
        DATABASE_URL: 'postgres://app@db:5432/scoring',
        NODE_ENV: 'development',
        BODY_LIMIT_BYTES: '2048',
        RATE_LIMIT_PER_SECOND: '0',
        ANONYMOUS_RATE_LIMIT_PER_SECOND: '5',
        PUBLIC_BASE_URL: 'https://scoring.example.com/api/',
        SECRETS_KEY: KEY,
        LOG_SIGNING_KEY: KEY,
        LOG_ORIGIN: 'scoring.example.com/log',
        LOG_CHECKPOINT_INTERVAL: '250ms',
        WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32, 10.0.0.0/8',
        WEBHOOK_RETRY_SCHEDULE: '10ms,1s,2m',
        WEBHOOK_TIMEOUT: '2s',
        WEBHOOK_DISABLE_AFTER: '1h',
      }),
    ).toMatchObject({
      port: 0,
      host: '127.0.0.1',
      dataDir: '/var/lib/scenario-scoring',
      databaseUrl: 'postgres://app@db:5432/scoring',
      nodeEnv: 'development',
      bodyLimitBytes: 2048,
      rateLimitPerSecond: 0,
      anonymousRateLimitPerSecond: 5,
      publicBaseUrl: 'https://scoring.example.com/api',
      webhooks: {
        allowedCidrs: ['127.0.0.1/32', '10.0.0.0/8'],
        allowHttp: true,
        retryScheduleMs: [10, 1000, 120_000],
        timeoutMs: 2000,
        disableAfterFailingMs: 3_600_000,
        secretsKey: KEY,
      },
      verifiableLog: {
        origin: 'scoring.example.com/log',
        keyName: 'scoring.example.com/log',
        signingKey: KEY,
        checkpointIntervalMs: 250,
      },
    });
  });

  it('requires LOG_SIGNING_KEY with DATABASE_URL, so every instance signs the log with one key', () => {
    expect(() => loadConfig({ DATABASE_URL: 'postgres://app@db/scoring', SECRETS_KEY: KEY })).toThrow(
      /LOG_SIGNING_KEY is required with DATABASE_URL/,
    );
    expect(() => loadConfig({ LOG_SIGNING_KEY: 'c2hvcnQ=', LOG_ORIGIN: 'has space' })).toThrow(
      /LOG_ORIGIN must have no spaces[\s\S]*LOG_SIGNING_KEY must be the base64 of a 32-byte Ed25519 private key/,
    );
  });

  it('requires SECRETS_KEY with DATABASE_URL, so every instance encrypts webhook secrets alike', () => {
    expect(() => loadConfig({ DATABASE_URL: 'postgres://app@db/scoring' })).toThrow(
      /SECRETS_KEY is required/,
    );
    expect(() => loadConfig({ SECRETS_KEY: 'c2hvcnQ=' })).toThrow(/SECRETS_KEY must be the base64 of 32/);
  });

  it('takes PUBLIC_BASE_URL only as a plain http(s) URL, and limits anonymous requests by default', () => {
    expect(loadConfig({}).publicBaseUrl).toBeUndefined();
    expect(loadConfig({}).anonymousRateLimitPerSecond).toBe(20);
    expect(loadConfig({ PUBLIC_BASE_URL: 'http://[::1]:3000' }).publicBaseUrl).toBe('http://[::1]:3000');
    for (const bad of [
      'scoring.example.com',
      'ftp://scoring.example.com',
      'https://user:pw@scoring.example.com',
      'https://scoring.example.com/?q=1',
      'https://scoring.example.com/#top',
    ]) {
      expect(() => loadConfig({ PUBLIC_BASE_URL: bad }), bad).toThrow(/PUBLIC_BASE_URL must be/);
    }
    // What the docs page gets is the URL as parsed: markup in the path is percent-encoded.
    expect(loadConfig({ PUBLIC_BASE_URL: 'https://scoring.example.com/"><script>' }).publicBaseUrl).toBe(
      'https://scoring.example.com/%22%3E%3Cscript%3E',
    );
  });

  it('refuses a malformed duration or CIDR', () => {
    expect(() => loadConfig({ WEBHOOK_RETRY_SCHEDULE: '5s,soon' })).toThrow(/WEBHOOK_RETRY_SCHEDULE must be/);
    expect(() => loadConfig({ WEBHOOK_ALLOWED_CIDRS: 'localhost' })).toThrow(/WEBHOOK_ALLOWED_CIDRS must be/);
    expect(() => loadConfig({ WEBHOOK_TIMEOUT: '2m' })).toThrow(/WEBHOOK_LEASE must be longer/);
  });

  it('refuses a duration without a unit, naming the variable, instead of reading it as milliseconds', () => {
    expect(() => loadConfig({ WEBHOOK_TIMEOUT: '15' })).toThrow(
      'WEBHOOK_TIMEOUT needs a unit: "15" could mean 15ms or 15s (write e.g. 15s)',
    );
    expect(() => loadConfig({ WEBHOOK_RETRY_SCHEDULE: '5s,300' })).toThrow(/WEBHOOK_RETRY_SCHEDULE must be/);
    expect(loadConfig({ WEBHOOK_TIMEOUT: '15s' }).webhooks.timeoutMs).toBe(15_000);
  });

  it('names every bad variable in one error, without echoing the database URL', () => {
    const env = {
      PORT: '80a',
      HOST: ' ',
      DATABASE_URL: 'mysql://user:s3cret@db/x',
      NODE_ENV: 'staging',
      BODY_LIMIT_BYTES: '-1',
      RATE_LIMIT_PER_SECOND: '1.5',
    };
    let error: unknown;
    try {
      loadConfig(env);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const { problems, message } = error as ConfigError;
    expect(problems).toEqual([
      'PORT must be an integer from 0 to 65535 (got "80a")',
      'HOST must not be empty',
      'DATABASE_URL must be a postgres:// or postgresql:// URL (leave it unset for SQLite)',
      'NODE_ENV must be one of development, test, production (got "staging")',
      'BODY_LIMIT_BYTES must be an integer from 1 to 67108864 (got "-1")',
      'RATE_LIMIT_PER_SECOND must be an integer from 0 to 1000000 (got "1.5")',
    ]);
    expect(message).not.toContain('s3cret');
  });

  it('reads LOG_WITNESS_POLICY as a C2SP tlog-policy file, and refuses a bad one or mode', () => {
    const dir = mkdtempSync(join(tmpdir(), 'policy-'));
    const good = join(dir, 'good.policy');
    const vkey = 'w+c1d3a1b0+BCdO1rJoBdL+jQYFKe6aLyh2O2l22cX9He44/zazt2k5';
    writeFileSync(good, `witness w1 ${vkey} http://127.0.0.1:7380\nquorum w1\n`);
    const config = loadConfig({ LOG_WITNESS_POLICY: good, LOG_WITNESS_MODE: 'fail-closed' });
    expect(config.verifiableLog.witnessPolicy?.policy.witnesses[0]?.url).toBe('http://127.0.0.1:7380');
    expect(config.verifiableLog.witnessMode).toBe('fail-closed');
    const bad = join(dir, 'bad.policy');
    writeFileSync(bad, `witness w1 ${vkey}\n`);
    expect(() => loadConfig({ LOG_WITNESS_POLICY: bad })).toThrow(/LOG_WITNESS_POLICY .*no quorum line/);
    expect(() => loadConfig({ LOG_WITNESS_POLICY: join(dir, 'missing') })).toThrow(/LOG_WITNESS_POLICY/);
    expect(() => loadConfig({ LOG_WITNESS_MODE: 'sometimes' })).toThrow(/LOG_WITNESS_MODE/);
    expect(() => loadConfig({ LOG_WITNESS_POLICY: good, LOG_KEY_NAME: 'other' })).toThrow(/LOG_KEY_NAME/);
  });

  it('refuses a port out of range', () => {
    expect(() => loadConfig({ PORT: '70000' })).toThrow(/PORT must be an integer from 0 to 65535/);
  });
});
