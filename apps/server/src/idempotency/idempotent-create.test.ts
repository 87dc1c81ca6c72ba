import { randomUUID } from 'node:crypto';
import type { Transaction } from 'kysely';
import { expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { AppError } from '../errors/app-error.js';
import { TenantKeyedHash } from '../keys/tenant-keyed-hash.js';
import type { Database } from '../storage/database.js';
import { IDEMPOTENCY_KEY_TTL_MS, idempotentCreate } from './idempotent-create.js';

const NOW = new Date('2026-11-22T10:00:00.000Z');

const KEYED_HASH = new TenantKeyedHash(Buffer.alloc(32, 7));

forEachDatabase('idempotentCreate', ({ storage }) => {
  // What a create commits is counted in the database: a create whose transaction rolls back leaves nothing.
  const create = async (trx: Transaction<Database>): Promise<{ id: string; b: string }> => {
    const id = `idem_${randomUUID()}`;
    await trx.insertInto('tenants').values({ id, created_at: NOW.toISOString() }).execute();
    return { id, b: 'x' };
  };
  const committed = async () => {
    const rows = await storage()
      .db.selectFrom('tenants')
      .select('id')
      .where('id', 'like', 'idem_%')
      .execute();
    return rows.length;
  };
  const scope = (key: string | undefined, body: unknown = { a: 1, b: [1, 2] }) => ({
    apiKeyId: 'key_idem',
    tenantId: 'ten_idem',
    keyedHash: KEYED_HASH,
    key,
    operation: 'createThing',
    body,
  });

  it('when the same key and body come again, then the first response is replayed and nothing is created twice', async () => {
    const before = await committed();
    const first = await idempotentCreate(storage().db, scope('k-same'), NOW, create);
    const again = await idempotentCreate(storage().db, scope('k-same', { b: [1, 2], a: 1 }), NOW, create);
    expect((await committed()) - before).toBe(1);
    expect(first.replayed).toBe(false);
    expect(again).toEqual({ ...first, replayed: true });
  });

  it('when the same key comes with another body, then it is refused with idempotency_key_reused', async () => {
    await idempotentCreate(storage().db, scope('k-other'), NOW, create);
    const refused = idempotentCreate(storage().db, scope('k-other', { a: 2 }), NOW, create);
    await expect(refused).rejects.toBeInstanceOf(AppError);
    await expect(refused).rejects.toMatchObject({ code: 'idempotency_key_reused' });
  });

  it('when the same key comes again, then it is replayed or refused as reused without being validated again', async () => {
    const valid = { ...scope('k-validated'), validate: () => {} };
    const first = await idempotentCreate(storage().db, valid, NOW, create);
    const invalidNow = () => {
      throw new AppError('webhook_url_refused', { detail: 'The host no longer resolves.' });
    };
    const again = await idempotentCreate(storage().db, { ...valid, validate: invalidNow }, NOW, create);
    expect(again).toEqual({ ...first, replayed: true });
    const reused = { ...scope('k-validated', { a: 2 }), validate: invalidNow };
    await expect(idempotentCreate(storage().db, reused, NOW, create)).rejects.toMatchObject({
      code: 'idempotency_key_reused',
    });
  });

  it('when validation fails, then nothing is created and the key is not used up', async () => {
    const before = await committed();
    const invalid = {
      ...scope('k-invalid'),
      validate: async () => {
        throw new AppError('webhook_url_refused', { detail: 'The host does not resolve.' });
      },
    };
    await expect(idempotentCreate(storage().db, invalid, NOW, create)).rejects.toMatchObject({
      code: 'webhook_url_refused',
    });
    await expect(
      idempotentCreate(storage().db, { ...invalid, key: undefined }, NOW, create),
    ).rejects.toMatchObject({
      code: 'webhook_url_refused',
    });
    expect(await committed()).toBe(before);
    expect((await idempotentCreate(storage().db, scope('k-invalid'), NOW, create)).replayed).toBe(false);
  });

  it('when no key is sent, then every request creates', async () => {
    const before = await committed();
    await idempotentCreate(storage().db, scope(undefined), NOW, create);
    await idempotentCreate(storage().db, scope(undefined), NOW, create);
    expect((await committed()) - before).toBe(2);
  });

  it('when concurrent requests share a key, then one creates and the others replay it', async () => {
    const before = await committed();
    const outcomes = await Promise.all(
      Array.from({ length: 5 }, () => idempotentCreate(storage().db, scope('k-race'), NOW, create)),
    );
    expect((await committed()) - before).toBe(1);
    expect(new Set(outcomes.map((outcome) => outcome.bodyJson)).size).toBe(1);
    expect(outcomes.filter((outcome) => !outcome.replayed)).toHaveLength(1);
  });

  it('when the create fails, then the key is not used up', async () => {
    const failing = idempotentCreate(storage().db, scope('k-fail'), NOW, async () => {
      throw new Error('boom');
    });
    await expect(failing).rejects.toThrow('boom');
    const later = await idempotentCreate(storage().db, scope('k-fail'), NOW, create);
    expect(later.replayed).toBe(false);
  });

  it('when the key is older than 24 hours, then it creates again', async () => {
    const before = await committed();
    await idempotentCreate(storage().db, scope('k-old'), NOW, create);
    const tomorrow = new Date(NOW.getTime() + IDEMPOTENCY_KEY_TTL_MS + 1);
    const again = await idempotentCreate(storage().db, scope('k-old', { other: true }), tomorrow, create);
    expect(again.replayed).toBe(false);
    expect((await committed()) - before).toBe(2);
  });
});
