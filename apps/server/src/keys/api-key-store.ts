import { type Kysely, sql } from 'kysely';
import { newId } from '../ids.js';
import type { Database } from '../storage/database.js';
import { API_KEY_PATTERN, generateApiKey, hashApiKey } from './api-key.js';
import { BoundedCache } from './bounded-cache.js';
import { DEFAULT_KEY_SCOPE, isKeyScope, type KeyScope } from './key-scope.js';

/** Cache hits for at most this long, so a key revoked elsewhere stops working within a minute. */
export const API_KEY_CACHE_TTL_MS = 60_000;
const API_KEY_CACHE_MAX_ENTRIES = 1000;

/** Who an API key belongs to. */
export interface ApiKeyOwner {
  tenantId: string;
  keyId: string;
  /** What the key may do (see key-scope.ts). */
  scope: KeyScope;
}

/** A key as an operator sees it (`list-keys`): never the key itself, only its hash is stored. */
export interface ApiKeyListing {
  id: string;
  tenant: string;
  scope: KeyScope;
  createdAt: string;
  revokedAt: string | null;
}

/** API keys of tenants, stored as SHA-256 hashes only. */
export interface ApiKeyStore {
  /**
   * Creates a key (`sk_` + 40 base62 chars) for the tenant, creating the tenant if missing; stores only
   * sha256(key). The key's scope is `full` unless given.
   */
  create(tenantId: string, scope?: KeyScope): Promise<{ key: string; keyId: string }>;
  /** Looks a key up by its hash (so no timing leak on the plaintext); hits are cached in a bounded LRU. */
  find(key: string): Promise<ApiKeyOwner | undefined>;
  /** The owner of `key` when `find` has it cached (found recently in this process); never asks the database. */
  findCached(key: string): ApiKeyOwner | undefined;
  /** Revokes a key; true when it was active. Later lookups refuse it (at once in this process). */
  revoke(keyId: string): Promise<boolean>;
  /** Number of usable API keys (revoked ones not counted). */
  countActive(): Promise<number>;
  /** Every key, oldest first, optionally of one tenant; revoked keys too unless `activeOnly`. */
  list(filter?: { tenant?: string | undefined; activeOnly?: boolean }): Promise<ApiKeyListing[]>;
  /** The id of the key `key` (revoked or not, looked up by its hash, never cached), if it exists. */
  idOfKey(key: string): Promise<string | undefined>;
  /** Ids that start with `prefix`, at most `limit` of them (the CLI names keys like short git hashes). */
  idsStartingWith(prefix: string, limit: number): Promise<string[]>;
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
    async create(tenantId, scope = DEFAULT_KEY_SCOPE) {
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
          .values({
            id: keyId,
            tenant_id: tenantId,
            key_hash: hashApiKey(key),
            scope,
            created_at: createdAt,
          })
          .execute();
      });
      return { key, keyId };
    },

    findCached(key) {
      return API_KEY_PATTERN.test(key) ? cache.get(hashApiKey(key)) : undefined;
    },

    async find(key) {
      // Anything not shaped like a key cannot match: spare the database.
      if (!API_KEY_PATTERN.test(key)) return undefined;
      const keyHash = hashApiKey(key);
      const cached = cache.get(keyHash);
      if (cached) return cached;
      const row = await db
        .selectFrom('api_keys')
        .select(['id', 'tenant_id', 'scope'])
        .where('key_hash', '=', keyHash)
        .where('revoked_at', 'is', null)
        .executeTakeFirst();
      if (!row) return undefined;
      const owner: ApiKeyOwner = { tenantId: row.tenant_id, keyId: row.id, scope: storedScope(row.scope) };
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

    async list(filter = {}) {
      let query = db
        .selectFrom('api_keys')
        .select(['id', 'tenant_id', 'scope', 'created_at', 'revoked_at'])
        .orderBy('created_at')
        .orderBy('id');
      if (filter.tenant !== undefined) query = query.where('tenant_id', '=', filter.tenant);
      if (filter.activeOnly) query = query.where('revoked_at', 'is', null);
      const rows = await query.execute();
      return rows.map((row) => ({
        id: row.id,
        tenant: row.tenant_id,
        scope: storedScope(row.scope),
        createdAt: String(row.created_at),
        revokedAt: row.revoked_at === null ? null : String(row.revoked_at),
      }));
    },

    async idOfKey(key) {
      if (!API_KEY_PATTERN.test(key)) return undefined;
      const row = await db
        .selectFrom('api_keys')
        .select('id')
        .where('key_hash', '=', hashApiKey(key))
        .executeTakeFirst();
      return row?.id;
    },

    async idsStartingWith(prefix, limit) {
      const rows = await db
        .selectFrom('api_keys')
        .select('id')
        // An exact, case-sensitive prefix on both databases: LIKE would read `_` as a wildcard, and
        // SQLite's LIKE ignores case where PostgreSQL's does not.
        .where(sql<string>`substr(id, 1, ${prefix.length})`, '=', prefix)
        .orderBy('id')
        .limit(limit)
        .execute();
      return rows.map((row) => row.id);
    },
  };
}

/**
 * A stored scope as the server knows it. A value this version does not know (written by a newer one) is
 * read as `log:read`, the narrowest, so an unknown scope never grants more than it was meant to.
 */
function storedScope(value: string): KeyScope {
  return isKeyScope(value) ? value : 'log:read';
}
