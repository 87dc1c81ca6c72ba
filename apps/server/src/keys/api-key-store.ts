import type { Kysely } from 'kysely';
import { newId } from '../ids.js';
import type { Database } from '../storage/database.js';
import { API_KEY_PATTERN, generateApiKey, hashApiKey } from './api-key.js';
import { BoundedCache } from './bounded-cache.js';

/** Cache hits for at most this long, so a key revoked elsewhere stops working within a minute. */
export const API_KEY_CACHE_TTL_MS = 60_000;
const API_KEY_CACHE_MAX_ENTRIES = 1000;

/** Who an API key belongs to. */
export interface ApiKeyOwner {
  tenantId: string;
  keyId: string;
}

/** API keys of tenants, stored as SHA-256 hashes only. */
export interface ApiKeyStore {
  /** Creates a key (`sk_` + 40 base62 chars) for the tenant, creating the tenant if missing; stores only sha256(key). */
  create(tenantId: string): Promise<{ key: string; keyId: string }>;
  /** Looks a key up by its hash (so no timing leak on the plaintext); hits are cached in a bounded LRU. */
  find(key: string): Promise<ApiKeyOwner | undefined>;
  /** Revokes a key; true when it was active. Later lookups refuse it (at once in this process). */
  revoke(keyId: string): Promise<boolean>;
  /** Number of usable API keys (revoked ones not counted). */
  countActive(): Promise<number>;
}

/**
 * An ApiKeyStore over `db`. `find` runs on every request, so found keys are cached in memory (bounded,
 * with a TTL) under their hash; misses are not cached, so a key created by another process works at once.
 */
export function createApiKeyStore(db: Kysely<Database>, now: () => Date = () => new Date()): ApiKeyStore {
  const cache = new BoundedCache<string, ApiKeyOwner>({
    maxEntries: API_KEY_CACHE_MAX_ENTRIES,
    ttlMs: API_KEY_CACHE_TTL_MS,
  });

  return {
    async create(tenantId) {
      const key = generateApiKey();
      const keyId = newId('key');
      const createdAt = now().toISOString();
      await db.transaction().execute(async (trx) => {
        await trx
          .insertInto('tenants')
          .values({ id: tenantId, created_at: createdAt })
          .onConflict((conflict) => conflict.column('id').doNothing())
          .execute();
        await trx
          .insertInto('api_keys')
          .values({ id: keyId, tenant_id: tenantId, key_hash: hashApiKey(key), created_at: createdAt })
          .execute();
      });
      return { key, keyId };
    },

    async find(key) {
      // Anything not shaped like a key cannot match: spare the database.
      if (!API_KEY_PATTERN.test(key)) return undefined;
      const keyHash = hashApiKey(key);
      const cached = cache.get(keyHash);
      if (cached) return cached;
      const row = await db
        .selectFrom('api_keys')
        .select(['id', 'tenant_id'])
        .where('key_hash', '=', keyHash)
        .where('revoked_at', 'is', null)
        .executeTakeFirst();
      if (!row) return undefined;
      const owner: ApiKeyOwner = { tenantId: row.tenant_id, keyId: row.id };
      cache.set(keyHash, owner);
      return owner;
    },

    async revoke(keyId) {
      const result = await db
        .updateTable('api_keys')
        .set({ revoked_at: now().toISOString() })
        .where('id', '=', keyId)
        .where('revoked_at', 'is', null)
        .executeTakeFirst();
      cache.deleteWhere((owner) => owner.keyId === keyId);
      return result.numUpdatedRows > 0n;
    },

    async countActive() {
      const row = await db
        .selectFrom('api_keys')
        .select((eb) => eb.fn.countAll<number | string | bigint>().as('count'))
        .where('revoked_at', 'is', null)
        .executeTakeFirstOrThrow();
      return Number(row.count);
    },
  };
}
