import { expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { openStorage } from '../storage/storage.js';
import { API_KEY_PATTERN } from './api-key.js';

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
    expect(await testFeatures(storage()).keys.find(key)).toEqual({ tenantId: 'tenant_find', keyId });
    expect(await testFeatures(storage()).keys.find(key)).toEqual({ tenantId: 'tenant_find', keyId }); // from the cache
    expect(await testFeatures(storage()).keys.find(`sk_${'0'.repeat(40)}`)).toBeUndefined();
    expect(await testFeatures(storage()).keys.find('not a key')).toBeUndefined();
    expect(await testFeatures(storage()).keys.find(`${key} `)).toBeUndefined();
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
});
