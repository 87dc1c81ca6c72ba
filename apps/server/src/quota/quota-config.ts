import type { EnvReader } from '../config/env-reader.js';
import { DEFAULT_USAGE_REFRESH_MS } from './storage-quota.js';

/** The default of `TENANT_STORAGE_QUOTA`: 10 GB per tenant. */
export const DEFAULT_TENANT_STORAGE_QUOTA_BYTES = 10_000_000_000;

/** How much one tenant may store. */
export interface QuotaConfig {
  /** The bound on a tenant's stored bytes (quota/tenant-usage.ts counts them); 0 for none. */
  tenantStorageQuotaBytes: number;
  /** How long an instance trusts a tenant's usage it read (not an environment setting; tests set 0). */
  usageRefreshMs: number;
}

const UNITS: Readonly<Record<string, number>> = {
  B: 1,
  KB: 1e3,
  MB: 1e6,
  GB: 1e9,
  TB: 1e12,
  KIB: 2 ** 10,
  MIB: 2 ** 20,
  GIB: 2 ** 30,
  TIB: 2 ** 40,
};

/**
 * A size with its unit (`10GB`, `500MB`, `2GiB`, `1024B`; KB, MB, GB, TB are powers of 1000, KiB, MiB,
 * GiB, TiB of 1024; the unit is case-insensitive), or `0`; undefined when it is not one.
 */
export function parseByteSize(text: string): number | undefined {
  const trimmed = text.trim();
  if (trimmed === '0') return 0;
  const match = /^(\d+(?:\.\d+)?)\s*([A-Za-z]+)$/.exec(trimmed);
  if (!match) return undefined;
  const unit = UNITS[(match[2] as string).toUpperCase()];
  if (unit === undefined) return undefined;
  const bytes = Math.floor(Number(match[1]) * unit);
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}

/** Reads `TENANT_STORAGE_QUOTA` (a size with a unit, `0` for no bound; default 10GB). */
export function readQuotaConfig(reader: EnvReader): QuotaConfig {
  const raw = reader.raw('TENANT_STORAGE_QUOTA');
  const usageRefreshMs = DEFAULT_USAGE_REFRESH_MS;
  if (raw === undefined)
    return { tenantStorageQuotaBytes: DEFAULT_TENANT_STORAGE_QUOTA_BYTES, usageRefreshMs };
  const bytes = parseByteSize(raw);
  if (bytes === undefined) {
    reader.problems.push(
      `TENANT_STORAGE_QUOTA must be a size with a unit such as 10GB, 500MB or 2GiB, or 0 for none (got "${raw}")`,
    );
    return { tenantStorageQuotaBytes: DEFAULT_TENANT_STORAGE_QUOTA_BYTES, usageRefreshMs };
  }
  return { tenantStorageQuotaBytes: bytes, usageRefreshMs };
}
