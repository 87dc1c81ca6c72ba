import ipaddr from 'ipaddr.js';
import type { EnvReader } from '../config/env-reader.js';
import type { OutboundPolicyConfig } from './outbound/outbound-address-policy.js';

/** The Standard Webhooks retry schedule: the delays after the 1st, 2nd, … failed attempt. */
export const DEFAULT_RETRY_SCHEDULE_MS: readonly number[] = [
  5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 50_400_000, 72_000_000, 86_400_000,
];
const DAY_MS = 86_400_000;
/** The default of `WEBHOOK_MAX_PER_TENANT`: webhooks (active or disabled, not deleted) one tenant may have. */
export const DEFAULT_MAX_WEBHOOKS_PER_TENANT = 50;
/** The default of `WEBHOOK_MAX_FANOUT`: the webhooks one event fans out to, oldest first. */
export const DEFAULT_MAX_DELIVERIES_PER_EVENT = 50;

/** How webhooks are delivered, and what they may be delivered to. */
export interface WebhookConfig extends OutboundPolicyConfig {
  /** The delay after each failed attempt; its length is the number of retries. */
  retryScheduleMs: number[];
  /** ± this fraction of random jitter on every retry delay (0.2 = ±20 %). */
  retryJitter: number;
  /** The least delay after a 429 or a timeout. */
  throttledMinDelayMs: number;
  /** An attempt fails when no complete 2xx arrives within this time. */
  timeoutMs: number;
  /** A webhook whose deliveries only failed for this long is disabled. */
  disableAfterFailingMs: number;
  /** How long a worker owns the deliveries it claimed; must exceed `timeoutMs`. */
  leaseMs: number;
  /** How often a worker looks for due deliveries when nothing woke it. */
  pollIntervalMs: number;
  /** Attempts in flight at once per instance. */
  concurrency: number;
  /**
   * The most of an instance's attempts one tenant may have in flight (and as many claimed and waiting for
   * a slot), however few tenants have work: with more, each one's share is less (see tenantShare), so a
   * tenant whose receivers hang or crawl never holds the slots the others need.
   */
  tenantConcurrency: number;
  /**
   * Consecutive failed attempts (timeouts, network errors, 5xx, 429) to one endpoint (a tenant's URL
   * origin) that open its circuit: no attempt to it for `breakerCooldownMs`, then one probe. 0 turns the
   * endpoint throttle off (its circuit and its concurrency limit that shrinks on failures).
   */
  breakerThreshold: number;
  /** How long an endpoint's open circuit lets no attempt through (its deliveries wait, not counted as attempts). */
  breakerCooldownMs: number;
  /** Webhooks (not deleted) one tenant may have: registrations beyond are 422 `webhook_limit_reached`. */
  maxWebhooksPerTenant: number;
  /** The most deliveries one event fans out to (the tenant's oldest matching webhooks first). */
  maxDeliveriesPerEvent: number;
  /**
   * The AES-256-GCM key (base64 of 32 bytes) that encrypts signing secrets at rest; undefined means a key
   * file generated in DATA_DIR (SQLite only).
   */
  secretsKey: string | undefined;
}

/**
 * Reads `WEBHOOK_*` and `SECRETS_KEY`. Durations take units (`5s`, `30m`, `2h`, `5d`), so tests can
 * compress hours into milliseconds (`WEBHOOK_RETRY_SCHEDULE=10ms,10ms`).
 */
export function readWebhookConfig(
  reader: EnvReader,
  context: { nodeEnv: string; databaseUrl: string | undefined },
): WebhookConfig {
  const development = context.nodeEnv === 'development';
  const allowedCidrs = reader.list('WEBHOOK_ALLOWED_CIDRS', development ? ['127.0.0.1/32', '::1/128'] : []);
  for (const cidr of allowedCidrs) {
    if (!/^[0-9a-fA-F:.]+\/[0-9]{1,3}$/.test(cidr) || !isCidr(cidr)) {
      reader.problems.push(
        `WEBHOOK_ALLOWED_CIDRS must be a comma-separated list of CIDRs such as 127.0.0.1/32 (got "${cidr}")`,
      );
    }
  }
  const timeoutMs = reader.durationMs('WEBHOOK_TIMEOUT', 15_000, 1);
  const leaseMs = reader.durationMs('WEBHOOK_LEASE', 60_000, 1);
  if (leaseMs <= timeoutMs) reader.problems.push('WEBHOOK_LEASE must be longer than WEBHOOK_TIMEOUT');
  const secretsKey = reader.raw('SECRETS_KEY');
  if (secretsKey !== undefined && Buffer.from(secretsKey, 'base64').length !== 32) {
    reader.problems.push('SECRETS_KEY must be the base64 of 32 random bytes (openssl rand -base64 32)');
  }
  if (secretsKey === undefined && context.databaseUrl !== undefined) {
    reader.problems.push(
      'SECRETS_KEY is required with DATABASE_URL: every instance must encrypt webhook secrets under the same key (openssl rand -base64 32)',
    );
  }
  // At least two slots: one tenant never holds them all (see tenantConcurrency).
  const concurrency = reader.integer('WEBHOOK_CONCURRENCY', 64, 2, 4096);
  const tenantConcurrency = reader.integer(
    'WEBHOOK_TENANT_CONCURRENCY',
    Math.max(1, Math.floor(concurrency / 2)),
    1,
    4096,
  );
  if (concurrency >= 2 && tenantConcurrency >= concurrency)
    reader.problems.push(
      `WEBHOOK_TENANT_CONCURRENCY must be less than WEBHOOK_CONCURRENCY (got ${tenantConcurrency}, with ${concurrency}): one tenant's hanging receivers would hold every delivery slot`,
    );
  return {
    allowedCidrs,
    allowHttp: development,
    retryScheduleMs: reader.durationListMs('WEBHOOK_RETRY_SCHEDULE', DEFAULT_RETRY_SCHEDULE_MS),
    retryJitter: 0.2,
    throttledMinDelayMs: reader.durationMs('WEBHOOK_THROTTLED_MIN_DELAY', 60_000),
    timeoutMs,
    disableAfterFailingMs: reader.durationMs('WEBHOOK_DISABLE_AFTER', 5 * DAY_MS, 1),
    leaseMs,
    pollIntervalMs: reader.durationMs('WEBHOOK_POLL_INTERVAL', 200, 1),
    concurrency,
    tenantConcurrency,
    breakerThreshold: reader.integer('WEBHOOK_BREAKER_THRESHOLD', 5, 0, 1_000_000),
    breakerCooldownMs: reader.durationMs('WEBHOOK_BREAKER_COOLDOWN', 30_000, 1),
    maxWebhooksPerTenant: reader.integer(
      'WEBHOOK_MAX_PER_TENANT',
      DEFAULT_MAX_WEBHOOKS_PER_TENANT,
      1,
      10_000,
    ),
    maxDeliveriesPerEvent: reader.integer('WEBHOOK_MAX_FANOUT', DEFAULT_MAX_DELIVERIES_PER_EVENT, 1, 10_000),
    secretsKey,
  };
}

/**
 * Whether the address checks can parse `cidr` (as ipaddr.js does): `10.0.0.0/33` or `::1/129` pass the
 * pattern, not this, and would otherwise fail every check at run time.
 */
function isCidr(cidr: string): boolean {
  try {
    ipaddr.parseCIDR(cidr);
    return true;
  } catch {
    return false;
  }
}
