import { Migrator } from 'kysely/migration';
import { expect, it } from 'vitest';
import { forEachDatabase } from '../../../test/support/test-databases.js';
import { testFeatures } from '../../../test/support/test-features.js';
import { migrateToLatest } from '../migrate.js';
import { MIGRATIONS } from './index.js';

forEachDatabase('migration 0009 (key scopes, idempotency expiry)', ({ storage, kind }) => {
  it('makes every existing key full, stores webhook URLs in their canonical form, and goes down and up again', async () => {
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
    await db
      .insertInto('webhooks')
      .values({
        id: 'wh_before',
        tenant_id: 'before-scopes',
        url: 'http://127.0.0.2:8080\\@127.0.0.1:9/v/x/../../admin',
        events: '["*"]',
        description: null,
        status: 'active',
        disabled_reason: null,
        failing_since: null,
        created_at: at,
        updated_at: at,
      })
      .execute();
    await migrateToLatest(db, kind);
    const webhook = await db
      .selectFrom('webhooks')
      .select('url')
      .where('id', '=', 'wh_before')
      .executeTakeFirst();
    expect(webhook?.url).toBe('http://127.0.0.2:8080/@127.0.0.1:9/admin');
    const listed = await testFeatures(storage()).keys.list({ tenant: 'before-scopes' });
    expect(listed).toMatchObject([{ id: 'key_before', scope: 'full' }]);
  });
});
