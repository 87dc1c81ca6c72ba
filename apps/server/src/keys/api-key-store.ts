import { type Kysely, sql } from 'kysely';
import { newId } from '../common/ids.js';
import type { Database } from '../storage/database.js';
import { API_KEY_PATTERN, generateApiKey, hashApiKey } from './api-key.js';
import { BoundedCache } from './bounded-cache.js';
import { DEFAULT_KEY_SCOPE, isKeyScope, type KeyScope } from './key-scope.js';

/**
 * A found key is believed for at most this long after the database last said it is active, so a key
 * revoked elsewhere (another instance, the CLI) stops working everywhere within a minute.
 */
export const API_KEY_CACHE_TTL_MS = 60_000;
/** A cached key used once it is this old is checked again in the background, so one in use never expires. */
export const API_KEY_REFRESH_AFTER_MS = 30_000;
const API_KEY_CACHE_MAX_ENTRIES = 1000;
/** How long a key the database does not know is remembered as unknown, and how many such keys. */
export const UNKNOWN_KEY_CACHE_TTL_MS = 60_000;
const UNKNOWN_KEY_CACHE_MAX_ENTRIES = 10_000;

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
  /**
   * Looks a key up by its hash (so no timing leak on the plaintext); hits are cached in a bounded LRU,
   * and so are misses (a key asked for again costs no lookup).
   */
  find(key: string): Promise<ApiKeyOwner | undefined>;
  /**
   * What this process knows of `key` without asking the database: its owner when found recently,
   * `null` when the database recently did not know it (or it is not shaped like a key), undefined when
   * only a lookup can tell.
   */
  findCached(key: string): ApiKeyOwner | null | undefined;
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
 * An ApiKeyStore over `db`. `find` runs on every request, so found keys are cached in memory (bounded)
 * under their hash, each for `API_KEY_CACHE_TTL_MS` after the database last confirmed it: one used when
 * older than `API_KEY_REFRESH_AFTER_MS` is looked up again in the background (one lookup at a time per
 * key), which renews it while the key is active and drops it once revoked. So a key in use never
 * expires, and a revocation made elsewhere takes effect within the TTL. Misses are cached too (bounded,
 * `UNKNOWN_KEY_CACHE_TTL_MS`): a key is random, so none can be asked for before it exists, and a key
 * created in this process is taken out of that cache.
 */
export function createApiKeyStore(db: Kysely<Database>, now: () => Date = () => new Date()): ApiKeyStore {
  const millis = () => now().getTime();
  const cache = new BoundedCache<string, { owner: ApiKeyOwner; checkedAt: number }>({
    maxEntries: API_KEY_CACHE_MAX_ENTRIES,
    ttlMs: API_KEY_CACHE_TTL_MS,
    now: millis,
  });
  const unknown = new BoundedCache<string, true>({
    maxEntries: UNKNOWN_KEY_CACHE_MAX_ENTRIES,
    ttlMs: UNKNOWN_KEY_CACHE_TTL_MS,
    now: millis,
  });
  const refreshing = new Set<string>();

  const lookUp = async (keyHash: string): Promise<ApiKeyOwner | undefined> => {
    const checkedAt = millis();
    const row = await db
      .selectFrom('api_keys')
      .select(['id', 'tenant_id', 'scope'])
      .where('key_hash', '=', keyHash)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    if (!row) {
      cache.delete(keyHash);
      unknown.set(keyHash, true);
      return undefined;
    }
    const owner: ApiKeyOwner = { tenantId: row.tenant_id, keyId: row.id, scope: storedScope(row.scope) };
    cache.set(keyHash, { owner, checkedAt });
    return owner;
  };

  /** The cached owner of `keyHash`, renewing the entry in the background when it is getting old. */
  const cached = (keyHash: string): ApiKeyOwner | undefined => {
    const entry = cache.get(keyHash);
    if (entry === undefined) return undefined;
    if (millis() - entry.checkedAt >= API_KEY_REFRESH_AFTER_MS && !refreshing.has(keyHash)) {
      refreshing.add(keyHash);
      // A failed renewal leaves the entry to expire at its TTL.
      lookUp(keyHash)
        .catch(() => undefined)
        .finally(() => refreshing.delete(keyHash));
    }
    return entry.owner;
  };

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
      unknown.delete(hashApiKey(key));
      return { key, keyId };
    },

    findCached(key) {
      // Anything not shaped like a key cannot match.
      if (!API_KEY_PATTERN.test(key)) return null;
      const keyHash = hashApiKey(key);
      return cached(keyHash) ?? (unknown.get(keyHash) ? null : undefined);
    },

    async find(key) {
      // Anything not shaped like a key cannot match: spare the database.
      if (!API_KEY_PATTERN.test(key)) return undefined;
      const keyHash = hashApiKey(key);
      const owner = cached(keyHash);
      if (owner !== undefined) return owner;
      if (unknown.get(keyHash)) return undefined;
      return lookUp(keyHash);
    },

    async revoke(keyId) {
      const result = await db
        .updateTable('api_keys')
        .set({ revoked_at: now().toISOString() })
        .where('id', '=', keyId)
        .where('revoked_at', 'is', null)
        .executeTakeFirst();
      cache.deleteWhere((entry) => entry.owner.keyId === keyId);
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
