import { request as httpRequest } from 'node:http';
import type { Problem, Run } from '@scenario-scoring/api-types';
import { waitUntil } from '@scenario-scoring/testkit';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { testRunWorker, waitForRunEnd } from '../../test/support/test-run-worker.js';
import { startTestServer, type TestServer, testConfig } from '../../test/support/test-server.js';
import { readTenantUsage, rowBytes } from '../quota/tenant-usage.js';
import { DEFAULT_UPLOAD_LIMITS } from './run-config.js';

const NDJSON = { 'content-type': 'application/x-ndjson' };

function item(tenant: string, i: number) {
  return { subject: `${tenant}-${i}`, context: { jurisdiction: 'DE', on_time_ratio: (i % 21) / 20 } };
}
const lines = (tenant: string, count: number) =>
  Array.from({ length: count }, (_, i) => JSON.stringify(item(tenant, i)));

/** What the lines count in their tenant's usage while they wait (run-upload.ts): each line's row. */
const linesBytes = (texts: string[]) =>
  texts.reduce(
    (sum, text) => sum + rowBytes((JSON.parse(text) as { subject: string }).subject, text, null),
    0,
  );

// What one tenant's NDJSON uploads may hold: uploads at once, items waiting, bytes of its quota; and the
// lines counted in its usage while they wait. No run worker here unless a test starts one: runs stay queued.
forEachDatabase('the bounds on one tenant’s NDJSON runs', ({ storage }) => {
  let server: TestServer;
  let quotaServer: TestServer;
  let idleServer: TestServer;
  const keys: Record<string, string> = {};
  beforeAll(async () => {
    const runs = {
      ...testConfig().runs,
      maxPendingItems: 300,
      upload: { ...DEFAULT_UPLOAD_LIMITS, maxLines: 10_000, maxUploadsPerTenant: 1 },
    };
    server = await startTestServer({ storage: storage(), config: { runs } });
    quotaServer = await startTestServer({
      storage: storage(),
      config: {
        runs: { ...runs, maxPendingItems: 1_000_000 },
        quota: { tenantStorageQuotaBytes: 800_000, usageRefreshMs: 0 },
      },
    });
    idleServer = await startTestServer({
      storage: storage(),
      config: { runs: { ...runs, upload: { ...runs.upload, idleTimeoutMs: 300, maxDurationMs: 1000 } } },
    });
    for (const tenant of [
      'mixed',
      'trickle',
      'idle',
      'busy',
      'other',
      'backlog',
      'counted',
      'quota',
      'long',
      'viaNdjson',
      'viaJson',
    ])
      keys[tenant] = (await testFeatures(storage()).keys.create(tenant)).key;
  });
  afterAll(async () => {
    await server.close();
    await quotaServer.close();
    await idleServer.close();
  });

  const post = (tenant: string, body: string, target = server) =>
    fetch(`${target.url}/v1/scoring/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys[tenant]}`, ...NDJSON },
      body,
    });
  /** A JSON run of `count` items for `tenant`. */
  const postJson = (tenant: string, count: number) =>
    server.request('/v1/scoring/runs', {
      method: 'POST',
      key: keys[tenant],
      body: { items: Array.from({ length: count }, (_, i) => item(tenant, i)) },
    });
  const runsOf = async (tenant: string) =>
    (await storage().db.selectFrom('runs').select(['id', 'status']).where('tenant_id', '=', tenant).execute())
      .length;
  const inputsOf = async (tenant: string) =>
    Number(
      (
        await storage()
          .db.selectFrom('run_inputs')
          .innerJoin('runs', 'runs.id', 'run_inputs.run_id')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('runs.tenant_id', '=', tenant)
          .executeTakeFirstOrThrow()
      ).n,
    );
  const usage = (tenant: string) => readTenantUsage(storage().db, tenant);

  /** An upload whose body stays open after `text`: its answer once `end()` sends the rest. */
  function openUpload(tenant: string, text: string, target = server) {
    const { port } = new URL(target.url);
    const sent = httpRequest({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/v1/scoring/runs',
      headers: { authorization: `Bearer ${keys[tenant]}`, ...NDJSON, 'transfer-encoding': 'chunked' },
    });
    sent.on('error', () => {});
    const answer = new Promise<{ status: number; body: string }>((resolve) => {
      sent.on('response', (res) => {
        let body = '';
        res.on('data', (chunk) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
    });
    sent.write(text);
    return {
      answer,
      write: (more: string) => sent.write(more),
      end: () => sent.end(),
      destroy: () => sent.destroy(),
    };
  }

  it('when a tenant’s upload in progress holds lines, then a JSON run that would take it past its items waiting is refused', async () => {
    const open = openUpload('mixed', `${lines('mixed', 250).join('\n')}\n`);
    await waitUntil(
      async () =>
        (await storage().db.selectFrom('runs').select('id').where('tenant_id', '=', 'mixed').execute())
          .length === 1,
      5000,
    );
    // The 250 lines have arrived (the upload's run row exists once its first byte is read; give them time).
    await new Promise((resolve) => setTimeout(resolve, 200));
    const refused = await postJson('mixed', 100);
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as Problem).detail).toMatch(
      /250 items waiting in runs, and this run would add 100/,
    );
    open.end();
    expect((await open.answer).status).toBe(202);
  });

  it('when an upload trickles a line now and then, then it is answered 408 once the upload time is up', async () => {
    const sent = openUpload('trickle', `${JSON.stringify(item('trickle', 0))}\n`, idleServer);
    // A line every 50 ms: never idle for the 300 ms idle time (a sixth of it, so a loaded machine's late
    // timers do not make it idle), but not done within the 1 s upload time.
    let i = 1;
    const trickle = setInterval(() => sent.write(`${JSON.stringify(item('trickle', i++))}\n`), 50);
    try {
      const { status, body } = await sent.answer;
      expect(status).toBe(408);
      expect((JSON.parse(body) as Problem).detail).toMatch(/did not finish within 1 s/);
    } finally {
      clearInterval(trickle);
      sent.destroy();
    }
    await waitUntil(async () => (await runsOf('trickle')) === 0, 5000);
  });

  it('when an upload (not compressed) sends nothing for the idle time, then it is answered 408 and no run is left', async () => {
    const open = openUpload('idle', `${lines('idle', 3).join('\n')}\n`, idleServer);
    const answer = await open.answer;
    expect(answer.status).toBe(408);
    const problem = JSON.parse(answer.body) as Problem;
    expect(problem.code).toBe('request_timeout');
    expect(problem.detail).toMatch(/sent nothing for 0.3 s; no run was created/);
    await waitUntil(async () => (await runsOf('idle')) === 0, 5000);
  });

  it('when a tenant has as many uploads in progress as it may, then another of its uploads is refused 429 before its body is read, while another tenant uploads', async () => {
    const open = openUpload('busy', `${lines('busy', 5).join('\n')}\n`);
    await waitUntil(
      async () =>
        (
          await storage()
            .db.selectFrom('runs')
            .select('id')
            .where('tenant_id', '=', 'busy')
            .where('status', '=', 'uploading')
            .execute()
        ).length === 1,
      5000,
    );
    const refused = await post('busy', `${lines('busy', 3).join('\n')}\n`);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('5');
    const problem = (await refused.json()) as Problem;
    expect(problem.code).toBe('rate_limited');
    expect(problem.detail).toMatch(/1 NDJSON uploads in progress/);
    expect((await post('other', `${lines('other', 3).join('\n')}\n`)).status).toBe(202);
    open.end();
    const first = await open.answer;
    expect(first.status).toBe(202);
    expect((JSON.parse(first.body) as Run).item_count).toBe(5);
    // The slot is free again once the first upload ended.
    expect((await post('busy', `${lines('busy', 3).join('\n')}\n`)).status).toBe(202);
  });

  it('when a run would take the tenant past its items waiting, then it is refused 429 (NDJSON or JSON), no run is created, and other tenants go on', async () => {
    expect((await post('backlog', `${lines('backlog', 200).join('\n')}\n`)).status).toBe(202);
    const refused = await post('backlog', `${lines('backlog', 150).join('\n')}\n`);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('60');
    const problem = (await refused.json()) as Problem;
    expect(problem.code).toBe('rate_limited');
    expect(problem.detail).toMatch(/the limit is 300 items waiting/);
    expect(await runsOf('backlog')).toBe(1);
    expect(await inputsOf('backlog')).toBe(200);
    const tooMany = await postJson('backlog', 101);
    expect(tooMany.status).toBe(429);
    expect(((await tooMany.json()) as Problem).detail).toMatch(
      /200 items waiting in runs, and this run would add 101/,
    );
    expect((await postJson('backlog', 100)).status).toBe(202);
    expect(await runsOf('backlog')).toBe(2);
    expect((await post('other', `${lines('other', 200).join('\n')}\n`)).status).toBe(202);
  });

  it('when lines are uploaded, then they count in the tenant’s usage while they wait, and stop counting when an upload is cut off', async () => {
    const before = await usage('counted');
    const sent = lines('counted', 50);
    expect((await post('counted', `${sent.join('\n')}\n`)).status).toBe(202);
    expect((await usage('counted')) - before).toBe(linesBytes(sent));
    const afterRun = await usage('counted');
    // A cut-off upload's lines stop counting with them (more than a batch is sent, so some were written).
    const open = openUpload('counted', `${lines('counted', 2100).join('\n')}\n`, quotaServer);
    await waitUntil(async () => (await usage('counted')) > afterRun, 5000);
    open.destroy();
    await waitUntil(
      async () => (await runsOf('counted')) === 1 && (await usage('counted')) === afterRun,
      5000,
    );
  });

  it('when lines are long, then a batch is written once it holds a few MB, not only every 2,000 lines', async () => {
    // 100 lines of 150 unknown members with 380-character names: each fails with a problem of about 46 KB,
    // 4.6 MB in all, past a batch's bound (BATCH_BYTES, less while the server is busy).
    const long = Array.from({ length: 100 }, (_, n) => {
      const context: Record<string, unknown> = { jurisdiction: 'DE' };
      for (let i = 0; i < 150; i++) context[`${'k'.repeat(380)}${i}`] = 1;
      return JSON.stringify({ subject: `long-${n}`, context });
    });
    const open = openUpload('long', `${long.join('\n')}\n`);
    try {
      // Written while the body is still open: with 2,000-line batches alone nothing would be before its end.
      await waitUntil(async () => (await inputsOf('long')) > 0, 5000);
    } finally {
      open.destroy();
    }
  });

  it('when an upload takes the tenant to its storage quota, then it is refused 403 quota_exceeded, and no run, line or byte of it is left', async () => {
    const before = await usage('quota');
    // About 1.2 MB of lines (150 bytes each) against a quota of 800 kB: the quota is checked before each
    // batch, so it is refused before the fourth batch of 2,000 lines (at 900 kB; or a later batch of 500
    // lines when the server is busy), never after the last.
    const refused = await post('quota', `${lines('quota', 8000).join('\n')}\n`, quotaServer);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as Problem).code).toBe('quota_exceeded');
    expect(await runsOf('quota')).toBe(0);
    expect(await inputsOf('quota')).toBe(0);
    expect(await usage('quota')).toBe(before);
  });

  it('when an NDJSON run completes, then its lines no longer count: its usage is that of the same run sent as JSON, less the JSON run’s items', async () => {
    const sent = lines('same', 40);
    const ndjson = await post('viaNdjson', `${sent.join('\n')}\n`);
    expect(ndjson.status).toBe(202);
    const items = sent.map((text) => JSON.parse(text));
    const json = await server.request('/v1/scoring/runs', {
      method: 'POST',
      key: keys.viaJson,
      body: { items },
    });
    expect(json.status).toBe(202);
    const worker = testRunWorker(storage(), { config: { batchSize: 15 } });
    worker.start();
    try {
      await waitForRunEnd(server, keys.viaNdjson as string, ((await ndjson.json()) as Run).id);
      await waitForRunEnd(server, keys.viaJson as string, ((await json.json()) as Run).id);
    } finally {
      await worker.stop();
    }
    expect(await inputsOf('viaNdjson')).toBe(0);
    // Their records are packed, each to its own size (salts differ): what each tenant's records hold, apart.
    const recordBytes = async (tenant: string) =>
      Number(
        (
          await storage()
            .db.selectFrom('log_records')
            .select(sql<number | string>`sum(length(bytes))`.as('bytes'))
            .where('tenant_id', '=', tenant)
            .executeTakeFirstOrThrow()
        ).bytes,
      );
    expect((await usage('viaNdjson')) - (await recordBytes('viaNdjson'))).toBe(
      (await usage('viaJson')) - (await recordBytes('viaJson')) - rowBytes(JSON.stringify(items)),
    );
  });
});
