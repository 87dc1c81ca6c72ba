import type { Kysely } from 'kysely';
import { AppError } from '../errors/app-error.js';
import type { Database } from '../storage/database.js';
import { readTenantUsage } from './tenant-usage.js';

/** How long a tenant's usage read from the database is trusted before it is read again. */
export const DEFAULT_USAGE_REFRESH_MS = 1_000;

/**
 * The per-tenant bound on stored bytes. `check` refuses a create with 403 `quota_exceeded` once the
 * tenant's usage (tenant_usage, read at most once per `refreshMs` per tenant and instance, so a scoring
 * at full rate costs no read of its own) has reached the limit. The bound is checked before the write,
 * so a tenant ends at most one refresh period of its writes past it; a tenant under it never waits for
 * another's. Reads and deletions are never checked.
 */
export class StorageQuota {
  readonly limitBytes: number;
  readonly #db: Kysely<Database>;
  readonly #refreshMs: number;
  readonly #now: () => number;
  readonly #cache = new Map<string, { bytes: number; readAt: number; reading?: Promise<number> }>();

  constructor(
    db: Kysely<Database>,
    limitBytes: number,
    options: { refreshMs?: number; now?: () => number } = {},
  ) {
    this.#db = db;
    this.limitBytes = limitBytes;
    this.#refreshMs = options.refreshMs ?? DEFAULT_USAGE_REFRESH_MS;
    this.#now = options.now ?? (() => performance.now());
  }

  /** Throws 403 `quota_exceeded` when `tenantId` has stored its limit or more (never with limit 0). */
  async check(tenantId: string): Promise<void> {
    if (this.limitBytes === 0) return;
    const used = await this.usage(tenantId);
    if (used >= this.limitBytes) {
      throw new AppError('quota_exceeded', {
        detail: `This tenant stores ${used} bytes, at or over its quota of ${this.limitBytes} bytes: nothing new can be stored until data is erased or the quota raised. Reads and erasure go on.`,
      });
    }
  }

  /**
   * What `check` would decide from the cache alone, without a promise: `true` when `tenantId`'s usage was
   * read less than `refreshMs` ago and is under the limit (or there is no limit), `false` otherwise (over
   * it, or only a read can tell). The middleware passes such a request on at once; any other goes
   * through `check`.
   */
  freshlyUnder(tenantId: string): boolean {
    if (this.limitBytes === 0) return true;
    const cached = this.#cache.get(tenantId);
    return (
      cached !== undefined && this.#now() - cached.readAt < this.#refreshMs && cached.bytes < this.limitBytes
    );
  }

  /** The tenant's usage, from the cache when it is fresh. */
  async usage(tenantId: string): Promise<number> {
    const now = this.#now();
    const cached = this.#cache.get(tenantId);
    if (cached && now - cached.readAt < this.#refreshMs) return cached.bytes;
    if (cached?.reading) return cached.reading;
    const entry = cached ?? { bytes: 0, readAt: Number.NEGATIVE_INFINITY };
    const reading = readTenantUsage(this.#db, tenantId).then(
      (bytes) => {
        entry.bytes = bytes;
        entry.readAt = this.#now();
        delete entry.reading;
        return bytes;
      },
      (error: unknown) => {
        delete entry.reading;
        throw error;
      },
    );
    entry.reading = reading;
    this.#cache.set(tenantId, entry);
    return reading;
  }
}
