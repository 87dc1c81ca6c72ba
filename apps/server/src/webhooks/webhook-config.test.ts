import { describe, expect, it } from 'vitest';
import { EnvReader } from '../config/env-reader.js';
import { readWebhookConfig } from './webhook-config.js';

const read = (env: NodeJS.ProcessEnv) => {
  const reader = new EnvReader(env);
  const config = readWebhookConfig(reader, { nodeEnv: 'production', databaseUrl: undefined });
  return { config, problems: reader.problems };
};

describe('readWebhookConfig', () => {
  it('takes the CIDRs of WEBHOOK_ALLOWED_CIDRS, IPv4 and IPv6', () => {
    const { config, problems } = read({ WEBHOOK_ALLOWED_CIDRS: '10.0.0.0/8,::1/128' });
    expect(problems).toEqual([]);
    expect(config.allowedCidrs).toEqual(['10.0.0.0/8', '::1/128']);
  });

  it('refuses at start-up a CIDR whose prefix is longer than its address, naming it', () => {
    const { problems } = read({ WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32,10.0.0.0/33,::1/129' });
    expect(problems).toEqual([
      'WEBHOOK_ALLOWED_CIDRS must be a comma-separated list of CIDRs such as 127.0.0.1/32 (got "10.0.0.0/33")',
      'WEBHOOK_ALLOWED_CIDRS must be a comma-separated list of CIDRs such as 127.0.0.1/32 (got "::1/129")',
    ]);
  });

  it("gives one tenant half an instance's delivery slots unless WEBHOOK_TENANT_CONCURRENCY says otherwise", () => {
    expect(read({}).config).toMatchObject({ concurrency: 64, tenantConcurrency: 32 });
    expect(read({ WEBHOOK_CONCURRENCY: '2' }).config.tenantConcurrency).toBe(1);
    expect(read({ WEBHOOK_CONCURRENCY: '3' }).config.tenantConcurrency).toBe(1);
    expect(read({ WEBHOOK_CONCURRENCY: '10', WEBHOOK_TENANT_CONCURRENCY: '3' }).config).toMatchObject({
      concurrency: 10,
      tenantConcurrency: 3,
    });
    expect(read({ WEBHOOK_TENANT_CONCURRENCY: '0' }).problems).toHaveLength(1);
  });

  it('opens an endpoint circuit after 5 consecutive failures for 30 s unless configured otherwise', () => {
    expect(read({}).config).toMatchObject({ breakerThreshold: 5, breakerCooldownMs: 30_000 });
    expect(read({ WEBHOOK_BREAKER_THRESHOLD: '0', WEBHOOK_BREAKER_COOLDOWN: '2s' }).config).toMatchObject({
      breakerThreshold: 0,
      breakerCooldownMs: 2_000,
    });
    expect(read({ WEBHOOK_BREAKER_THRESHOLD: '-1' }).problems).toHaveLength(1);
  });

  it('refuses settings that let one tenant hold every delivery slot', () => {
    expect(read({ WEBHOOK_CONCURRENCY: '1' }).problems).toEqual([
      expect.stringContaining('WEBHOOK_CONCURRENCY'),
    ]);
    expect(read({ WEBHOOK_CONCURRENCY: '8', WEBHOOK_TENANT_CONCURRENCY: '8' }).problems).toEqual([
      "WEBHOOK_TENANT_CONCURRENCY must be less than WEBHOOK_CONCURRENCY (got 8, with 8): one tenant's hanging receivers would hold every delivery slot",
    ]);
  });
});
