import { Migrator } from 'kysely/migration';
import { expect, it } from 'vitest';
import { forEachDatabase } from '../../../test/support/test-databases.js';
import { testFeatures } from '../../../test/support/test-features.js';
import { migrateToLatest } from '../migrate.js';
import { MIGRATIONS } from './index.js';

forEachDatabase('migration 0010 (key scopes, idempotency expiry)', ({ storage, kind }) => {
  it('makes every existing key full, and goes down and up again', async () => {
    const db = storage().db;
    const migrator = new Migrator({ db, provider: { getMigrations: async () => ({ ...MIGRATIONS }) } });
    expect((await migrator.migrateTo('0008-fair-run-claims')).error).toBeUndefined();
    // A key as the server wrote it before scopes existed: no scope column.
    const at = new Date().toISOString();
    await db.insertInto('tenants').values({ id: 'before-scopes', created_at: at }).execute();
    await db
      .insertInto('api_keys')
      .values({ id: 'key_before', tenant_id: 'before-scopes', key_hash: 'f'.repeat(64), created_at: at })
      .execute();
    await migrateToLatest(db, kind);
    const listed = await testFeatures(storage()).keys.list({ tenant: 'before-scopes' });
    expect(listed).toMatchObject([{ id: 'key_before', scope: 'full' }]);
  });
});
