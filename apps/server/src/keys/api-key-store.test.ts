import type { KyselyPlugin } from 'kysely';
import { expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { openStorage, type Storage } from '../storage/storage.js';
import { API_KEY_PATTERN, generateApiKey } from './api-key.js';
import { API_KEY_CACHE_TTL_MS, createApiKeyStore } from './api-key-store.js';

/** A store over `storage`'s database on a clock the test moves, counting the queries it sends. */
function countedStore(storage: Storage) {
  let time = Date.parse('2025-01-01T00:00:00Z');
  const counted = { queries: 0 };
  const counting: KyselyPlugin = {
    transformQuery: (args) => {
      counted.queries++;
      return args.node;
    },
    transformResult: async (args) => args.result,
  };
  const keys = createApiKeyStore(storage.db.withPlugin(counting), () => new Date(time));
  return {
    keys,
    counted,
    advance: (ms: number) => {
      time += ms;
    },
  };
}

/** Lets a background lookup finish. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

forEachDatabase('API key storage', ({ storage, database }) => {
  it('creates a key of the documented shape with a key_ id, and its tenant', async () => {
    const { key, keyId } = await testFeatures(storage()).keys.create('tenant_shape');
    expect(key).toMatch(API_KEY_PATTERN);
    expect(keyId).toMatch(/^key_[0-9A-HJKMNP-TV-Z]{26}$/);
    const tenant = await storage()
      .db.selectFrom('tenants')
      .selectAll()
      .where('id', '=', 'tenant_shape')
      .execute();
    expect(tenant).toHaveLength(1);
  });

  it('stores only the hash: the plaintext appears in no column', async () => {
    const { key, keyId } = await testFeatures(storage()).keys.create('tenant_hash');
    const row = await storage()
      .db.selectFrom('api_keys')
      .selectAll()
      .where('id', '=', keyId)
      .executeTakeFirstOrThrow();
    expect(JSON.stringify(row)).not.toContain(key);
    expect(JSON.stringify(row)).not.toContain(key.slice(3));
    expect(row.key_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('finds the owner of a key, and nothing for an unknown or malformed key', async () => {
    const { key, keyId } = await testFeatures(storage()).keys.create('tenant_find');
    const owner = { tenantId: 'tenant_find', keyId, scope: 'full' };
    expect(await testFeatures(storage()).keys.find(key)).toEqual(owner);
    expect(await testFeatures(storage()).keys.find(key)).toEqual(owner); // from the cache
    expect(await testFeatures(storage()).keys.find(`sk_${'0'.repeat(40)}`)).toBeUndefined();
    expect(await testFeatures(storage()).keys.find('not a key')).toBeUndefined();
    expect(await testFeatures(storage()).keys.find(`${key} `)).toBeUndefined();
  });

  it('keeps the scope a key was created with: full by default, log:read when asked, and lists it', async () => {
    const keys = testFeatures(storage()).keys;
    const full = await keys.create('tenant_scopes');
    const auditor = await keys.create('tenant_scopes', 'log:read');
    expect(await keys.find(full.key)).toMatchObject({ scope: 'full' });
    expect(await keys.find(auditor.key)).toMatchObject({ scope: 'log:read', keyId: auditor.keyId });
    const listed = await keys.list({ tenant: 'tenant_scopes' });
    expect(listed.map((key) => [key.id, key.scope])).toEqual([
      [full.keyId, 'full'],
      [auditor.keyId, 'log:read'],
    ]);
  });

  it('reads a scope it does not know (written by a newer version) as log:read, never as more', async () => {
    const keys = testFeatures(storage()).keys;
    const { key, keyId } = await keys.create('tenant_future');
    await storage().db.updateTable('api_keys').set({ scope: 'admin:all' }).where('id', '=', keyId).execute();
    expect(await keys.find(key)).toMatchObject({ scope: 'log:read' });
  });

  it('gives one tenant several keys', async () => {
    const first = await testFeatures(storage()).keys.create('tenant_many');
    const second = await testFeatures(storage()).keys.create('tenant_many');
    expect(first.key).not.toBe(second.key);
    expect((await testFeatures(storage()).keys.find(second.key))?.tenantId).toBe('tenant_many');
  });

  it('refuses a revoked key, even one cached a moment before', async () => {
    const { key, keyId } = await testFeatures(storage()).keys.create('tenant_revoke');
    expect(await testFeatures(storage()).keys.find(key)).toBeDefined();
    expect(await testFeatures(storage()).keys.revoke(keyId)).toBe(true);
    expect(await testFeatures(storage()).keys.revoke(keyId)).toBe(false);
    expect(await testFeatures(storage()).keys.find(key)).toBeUndefined();
    const other = await openStorage(database().options);
    try {
      expect(await testFeatures(other).keys.find(key)).toBeUndefined();
    } finally {
      await other.close();
    }
  });

  it('counts the usable keys', async () => {
    const before = await testFeatures(storage()).keys.countActive();
    const { keyId } = await testFeatures(storage()).keys.create('tenant_count');
    await testFeatures(storage()).keys.create('tenant_count');
    expect(await testFeatures(storage()).keys.countActive()).toBe(before + 2);
    await testFeatures(storage()).keys.revoke(keyId);
    expect(await testFeatures(storage()).keys.countActive()).toBe(before + 1);
  });

  it('lists keys oldest first without the keys, by tenant and active only when asked', async () => {
    const keys = testFeatures(storage()).keys;
    const first = await keys.create('tenant_list');
    const second = await keys.create('tenant_list');
    await keys.revoke(first.keyId);
    const listed = await keys.list({ tenant: 'tenant_list' });
    expect(listed.map((key) => key.id)).toEqual([first.keyId, second.keyId]);
    expect(listed[0]).toMatchObject({ tenant: 'tenant_list', revokedAt: expect.any(String) });
    expect(listed[1]).toMatchObject({ tenant: 'tenant_list', revokedAt: null });
    expect(JSON.stringify(listed)).not.toContain(first.key);
    expect((await keys.list({ tenant: 'tenant_list', activeOnly: true })).map((key) => key.id)).toEqual([
      second.keyId,
    ]);
  });

  it('finds a key id by the key (revoked too) and by a prefix of the id', async () => {
    const keys = testFeatures(storage()).keys;
    const { key, keyId } = await keys.create('tenant_ids');
    await keys.revoke(keyId);
    expect(await keys.idOfKey(key)).toBe(keyId);
    expect(await keys.idOfKey(`sk_${'0'.repeat(40)}`)).toBeUndefined();
    expect(await keys.idsStartingWith(keyId, 2)).toEqual([keyId]);
    expect(await keys.idsStartingWith(keyId.slice(0, 20), 100)).toContain(keyId);
    expect(await keys.idsStartingWith('key_ZZZZZZ', 2)).toEqual([]);
    // Exact and case-sensitive on both databases: `_` is no wildcard, and case matters.
    expect(await keys.idsStartingWith(`${keyId.slice(0, 5)}_${keyId.slice(6)}`, 2)).toEqual([]);
    expect(await keys.idsStartingWith(keyId.toLowerCase(), 2)).toEqual([]);
  });

  it('caches a miss: the same unknown key asked for again costs no lookup', async () => {
    const { keys, counted } = countedStore(storage());
    const unknown = generateApiKey();
    expect(await keys.find(unknown)).toBeUndefined();
    expect(counted.queries).toBe(1);
    expect(await keys.find(unknown)).toBeUndefined();
    expect(keys.findCached(unknown)).toBeNull();
    expect(counted.queries).toBe(1);
    // Malformed keys never reach the database, and are known to be nothing.
    expect(keys.findCached('not a key')).toBeNull();
    // A key created by this process is taken out of the cache of misses.
    const { key } = await keys.create('tenant_negative');
    expect(await keys.find(key)).toMatchObject({ tenantId: 'tenant_negative' });
  });

  it('keeps a key in use cached past the TTL, renewing it in the background', async () => {
    const { keys, counted, advance } = countedStore(storage());
    const { key, keyId } = await testFeatures(storage()).keys.create('tenant_sliding');
    expect(await keys.find(key)).toEqual({ tenantId: 'tenant_sliding', keyId, scope: 'full' });
    const afterFirst = counted.queries;
    // Used every 10 s for 3 minutes: never uncached, and renewed about every 30 s, not on every use.
    for (let elapsed = 0; elapsed < 3 * API_KEY_CACHE_TTL_MS; elapsed += 10_000) {
      advance(10_000);
      expect(keys.findCached(key)).toEqual({ tenantId: 'tenant_sliding', keyId, scope: 'full' });
      await settle();
    }
    expect(counted.queries - afterFirst).toBeGreaterThanOrEqual(4);
    expect(counted.queries - afterFirst).toBeLessThanOrEqual(7);
  });

  it('drops a key in use within the TTL once it is revoked elsewhere', async () => {
    const { keys, advance } = countedStore(storage());
    const { key, keyId } = await testFeatures(storage()).keys.create('tenant_revoked_elsewhere');
    expect(await keys.find(key)).toBeDefined();
    // Another process (the CLI, another instance) revokes it: this store's cache cannot be told.
    const other = await openStorage(database().options);
    try {
      expect(await testFeatures(other).keys.revoke(keyId)).toBe(true);
    } finally {
      await other.close();
    }
    let refusedAfter: number | undefined;
    for (let elapsed = 10_000; elapsed <= API_KEY_CACHE_TTL_MS; elapsed += 10_000) {
      advance(10_000);
      if (keys.findCached(key) !== undefined && keys.findCached(key) !== null) {
        await settle();
        continue;
      }
      refusedAfter = elapsed;
      break;
    }
    expect(refusedAfter).toBeDefined();
    expect(refusedAfter).toBeLessThanOrEqual(API_KEY_CACHE_TTL_MS);
    expect(await keys.find(key)).toBeUndefined();
  });
});
