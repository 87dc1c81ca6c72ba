import { expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { openStorage } from '../storage/storage.js';
import { API_KEY_PATTERN } from './api-key.js';

forEachDatabase('API key storage', ({ storage, database }) => {
  it('creates a key of the documented shape with a key_ id, and its tenant', async () => {
    const { key, keyId } = await storage().createApiKey('tenant_shape');
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
    const { key, keyId } = await storage().createApiKey('tenant_hash');
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
    const { key, keyId } = await storage().createApiKey('tenant_find');
    expect(await storage().findApiKey(key)).toEqual({ tenantId: 'tenant_find', keyId });
    expect(await storage().findApiKey(key)).toEqual({ tenantId: 'tenant_find', keyId }); // from the cache
    expect(await storage().findApiKey(`sk_${'0'.repeat(40)}`)).toBeUndefined();
    expect(await storage().findApiKey('not a key')).toBeUndefined();
    expect(await storage().findApiKey(`${key} `)).toBeUndefined();
  });

  it('gives one tenant several keys', async () => {
    const first = await storage().createApiKey('tenant_many');
    const second = await storage().createApiKey('tenant_many');
    expect(first.key).not.toBe(second.key);
    expect((await storage().findApiKey(second.key))?.tenantId).toBe('tenant_many');
  });

  it('refuses a revoked key, even one cached a moment before', async () => {
    const { key, keyId } = await storage().createApiKey('tenant_revoke');
    expect(await storage().findApiKey(key)).toBeDefined();
    expect(await storage().revokeApiKey(keyId)).toBe(true);
    expect(await storage().revokeApiKey(keyId)).toBe(false);
    expect(await storage().findApiKey(key)).toBeUndefined();
    const other = await openStorage(database().options);
    try {
      expect(await other.findApiKey(key)).toBeUndefined();
    } finally {
      await other.close();
    }
  });

  it('counts the usable keys', async () => {
    const before = await storage().countApiKeys();
    const { keyId } = await storage().createApiKey('tenant_count');
    await storage().createApiKey('tenant_count');
    expect(await storage().countApiKeys()).toBe(before + 2);
    await storage().revokeApiKey(keyId);
    expect(await storage().countApiKeys()).toBe(before + 1);
  });
});
