import { randomUUID } from 'node:crypto';
import type { Transaction } from 'kysely';
import { expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { TenantKeyedHash } from '../keys/tenant-keyed-hash.js';
import { silentLogger } from '../request-logging/logger.js';
import type { Database } from '../storage/database.js';
import { IdempotencyPurge } from './idempotency-purge.js';
import { IDEMPOTENCY_KEY_TTL_MS, idempotentCreate } from './idempotent-create.js';

const DAY_AGO = new Date(Date.now() - IDEMPOTENCY_KEY_TTL_MS - 60_000);
const HOUR = 60 * 60 * 1000;

const KEYED_HASH = new TenantKeyedHash(Buffer.alloc(32, 7));

forEachDatabase('the idempotency purge', ({ storage }) => {
  const create = async (trx: Transaction<Database>): Promise<{ id: string }> => {
    const id = `purge_${randomUUID()}`;
    await trx.insertInto('tenants').values({ id, created_at: new Date().toISOString() }).execute();
    return { id };
  };
  const scope = (apiKeyId: string, key: string) => ({
    apiKeyId,
    tenantId: 'ten_idem',
    keyedHash: KEYED_HASH,
    key,
    operation: 'createThing',
    body: { a: 1 },
  });
  const stored = async (apiKeyId: string) =>
    (
      await storage()
        .db.selectFrom('idempotency_keys')
        .select('key')
        .where('api_key_id', '=', apiKeyId)
        .orderBy('key')
        .execute()
    ).map((row) => row.key);

  it('deletes the keys older than 24 hours, in bounded batches, keeps the younger, and a retry after is new', async () => {
    const apiKeyId = `key_${randomUUID()}`;
    const db = storage().db;
    const old = await Promise.all(
      ['old-1', 'old-2', 'old-3', 'old-4', 'old-5'].map((key) =>
        idempotentCreate(db, scope(apiKeyId, key), DAY_AGO, create),
      ),
    );
    await idempotentCreate(db, scope(apiKeyId, 'young'), new Date(Date.now() - 23 * HOUR), create);
    await idempotentCreate(db, scope(apiKeyId, 'now'), new Date(), create);
    expect(await stored(apiKeyId)).toHaveLength(7);

    const purge = new IdempotencyPurge({
      db,
      clock: { now: () => new Date() },
      logger: silentLogger,
      batchSize: 2,
    });
    // Other tests' keys are young, so only these five are old enough.
    expect(await purge.purgeOnce()).toBeGreaterThanOrEqual(5);
    expect(await stored(apiKeyId)).toEqual(['now', 'young']);
    expect(await purge.purgeOnce()).toBe(0);

    // The same key and body after the purge: created anew, not replayed.
    const retried = await idempotentCreate(db, scope(apiKeyId, 'old-1'), new Date(), create);
    expect(retried.replayed).toBe(false);
    expect(retried.bodyJson).not.toBe(old[0]?.bodyJson);
    expect(await stored(apiKeyId)).toEqual(['now', 'old-1', 'young']);
  });

  it('purges as a worker: at start, and again on its interval, by the clock it is given', async () => {
    const apiKeyId = `key_${randomUUID()}`;
    const db = storage().db;
    await idempotentCreate(db, scope(apiKeyId, 'soon-old'), new Date(), create);
    let now = new Date();
    const purge = new IdempotencyPurge({
      db,
      clock: { now: () => now },
      logger: silentLogger,
      intervalMs: 20,
    });
    purge.start();
    try {
      expect(purge.running).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 60));
      expect(await stored(apiKeyId)).toEqual(['soon-old']);
      // A day and a minute later by the clock: the next round deletes it.
      now = new Date(Date.now() + IDEMPOTENCY_KEY_TTL_MS + 60_000);
      await expect.poll(() => stored(apiKeyId), { timeout: 2000 }).toEqual([]);
    } finally {
      await purge.stop();
    }
    expect(purge.running).toBe(false);
  });
});
