import type { Problem, ScoreResponse } from '@scenario-scoring/api-types';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';
import { unpackRecord } from '../storage/record-codec.js';
import { parseByteSize } from './quota-config.js';
import { StorageQuota } from './storage-quota.js';
import { listTenantUsage, ROW_OVERHEAD_BYTES, readTenantUsage } from './tenant-usage.js';

/** A quota a few scorings fill (a record is about 1 KB). */
const QUOTA_BYTES = 16_000;
const CONTEXT = { jurisdiction: 'FR', on_time_ratio: 0.95, utilization: 0.2, history_months: 48 };

forEachDatabase('the storage quota', ({ storage }) => {
  it('decides from a fresh cached usage without a promise, and only under the limit', async () => {
    let now = 0;
    const quota = new StorageQuota(storage().db, 1_000, { refreshMs: 100, now: () => now });
    // Nothing read yet: only a read can tell.
    expect(quota.freshlyUnder('fresh-tenant')).toBe(false);
    await quota.check('fresh-tenant');
    expect(quota.freshlyUnder('fresh-tenant')).toBe(true);
    now = 100;
    expect(quota.freshlyUnder('fresh-tenant')).toBe(false);
    expect(new StorageQuota(storage().db, 0).freshlyUnder('fresh-tenant')).toBe(true);
    // At the limit, the cached usage never passes at once: `check` refuses it.
    await storage()
      .db.insertInto('tenant_usage')
      .values({ tenant_id: 'full-tenant', bytes: 1_000, updated_at: new Date().toISOString() })
      .execute();
    await expect(quota.check('full-tenant')).rejects.toMatchObject({ code: 'quota_exceeded' });
    expect(quota.freshlyUnder('full-tenant')).toBe(false);
  });

  let server: TestServer;
  let keyA: string;
  let keyB: string;
  beforeAll(async () => {
    // Usage read afresh on every create: the test sees the bound as soon as it is reached.
    server = await startTestServer({
      storage: storage(),
      config: { quota: { tenantStorageQuotaBytes: QUOTA_BYTES, usageRefreshMs: 0 }, rateLimitPerSecond: 0 },
    });
    ({ key: keyA } = await testFeatures(storage()).keys.create('quota-a'));
    ({ key: keyB } = await testFeatures(storage()).keys.create('quota-b'));
  });
  afterAll(() => server.close());

  const score = (key: string, subject: string) =>
    server.request('/v1/scoring/score', { key, body: { subject, context: CONTEXT } });

  it("counts what a scoring stores in its tenant's usage: the record's bytes as stored (packed) and its row", async () => {
    const before = await readTenantUsage(storage().db, 'quota-b');
    const answer = (await (await score(keyB, 'usage-subject')).json()) as ScoreResponse;
    const record = Buffer.from(
      await (await server.request(`/v1/logs/${answer.log_cid}`, { key: keyB })).arrayBuffer(),
    );
    const stored = await storage()
      .db.selectFrom('log_records')
      .select('bytes')
      .where('tenant_id', '=', 'quota-b')
      .where('cid', '=', answer.log_cid)
      .executeTakeFirstOrThrow();
    expect(unpackRecord(stored.bytes).equals(record)).toBe(true);
    expect(stored.bytes.length).toBeLessThan(record.length / 4);
    expect((await readTenantUsage(storage().db, 'quota-b')) - before).toBe(
      stored.bytes.length + ROW_OVERHEAD_BYTES,
    );
  });

  it('holds a tenant at its quota (403 quota_exceeded on creates, reads go on) while another tenant scores at full rate', async () => {
    let refused: Response | undefined;
    let cid: string | undefined;
    for (let n = 0; n < 100 && refused === undefined; n++) {
      const response = await score(keyA, `a-${n}`);
      if (response.status === 403) refused = response;
      else {
        expect(response.status).toBe(200);
        cid = ((await response.json()) as ScoreResponse).log_cid;
      }
    }
    expect(refused).toBeDefined();
    const problem = (await refused?.json()) as Problem;
    expect(problem).toMatchObject({ status: 403, code: 'quota_exceeded', title: 'Quota exceeded' });
    const usedA = await readTenantUsage(storage().db, 'quota-a');
    expect(usedA).toBeGreaterThanOrEqual(QUOTA_BYTES);
    // Past the bound by at most the one scoring that crossed it.
    expect(usedA).toBeLessThan(QUOTA_BYTES + 2_500);

    // Tenant B, at full rate (concurrent scorings), meanwhile tenant A keeps being refused.
    const [answersB, answersA] = await Promise.all([
      Promise.all(Array.from({ length: 5 }, (_, n) => score(keyB, `b-${n}`))),
      Promise.all(Array.from({ length: 5 }, (_, n) => score(keyA, `a-more-${n}`))),
    ]);
    expect(answersB.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(answersA.map((r) => r.status)).toEqual([403, 403, 403, 403, 403]);
    expect(await readTenantUsage(storage().db, 'quota-a')).toBe(usedA);

    // Every creating operation is refused for A; reads are answered.
    const run = await server.request('/v1/scoring/runs', {
      key: keyA,
      body: { items: [{ subject: 'r', context: CONTEXT }] },
    });
    expect(run.status).toBe(403);
    expect(((await run.json()) as Problem).code).toBe('quota_exceeded');
    const hook = await server.request('/v1/webhooks/register', {
      key: keyA,
      body: { url: 'https://example.com/hook', events: ['*'] },
    });
    expect(hook.status).toBe(403);
    expect((await server.request(`/v1/logs/${cid}`, { key: keyA })).status).toBe(200);
    expect((await server.request('/v1/webhooks', { key: keyA })).status).toBe(200);
    expect((await server.request('/v1/scoring/policies/FR', { key: keyA })).status).toBe(200);
    const usage = await listTenantUsage(storage().db);
    expect(usage.get('quota-b')).toBeLessThan(QUOTA_BYTES);
  });
});

it('reads sizes with their units, and 0 for none', () => {
  expect(parseByteSize('10GB')).toBe(10_000_000_000);
  expect(parseByteSize('2GiB')).toBe(2 * 2 ** 30);
  expect(parseByteSize('500 mb')).toBe(500_000_000);
  expect(parseByteSize('0')).toBe(0);
  expect(parseByteSize('10')).toBeUndefined();
  expect(parseByteSize('ten GB')).toBeUndefined();
  expect(parseByteSize('5XB')).toBeUndefined();
});
