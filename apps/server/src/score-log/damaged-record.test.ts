import type { Run, ScoreResponse } from '@scenario-scoring/api-types';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { testRecord } from '../../test/support/log-fixtures.js';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { testRunWorker, waitForRunEnd } from '../../test/support/test-run-worker.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';
import type { Logger } from '../request-logging/logger.js';
import { packRecord } from '../storage/record-codec.js';

const CONTEXT = { jurisdiction: 'DE', utilization: 0.3, on_time_ratio: 0.95, history_months: 48 };

/** A row under `cid` whose stored bytes are another record's (as a changed database would hold). */
async function damagedRow(
  server: { storage: () => import('../storage/storage.js').Storage },
  tenant: string,
) {
  const [named, stored] = [testRecord(tenant, 1), testRecord(tenant, 2)];
  await server
    .storage()
    .db.insertInto('log_records')
    .values({
      tenant_id: tenant,
      cid: named.cid,
      bytes: packRecord(stored.bytes),
      request_id: 'req_damaged',
      created_at: new Date().toISOString(),
    })
    .execute();
  return named.cid;
}

forEachDatabase('a log record whose stored bytes do not give its CID', ({ storage }) => {
  let server: TestServer;
  let key: string;
  const logged: { message: string; fields: Record<string, unknown> | undefined }[] = [];
  const logger: Logger = {
    info() {},
    error: (message, fields) => logged.push({ message, fields }),
  };
  beforeAll(async () => {
    server = await startTestServer({ storage: storage(), logger });
    ({ key } = await testFeatures(storage()).keys.create('damaged'));
  });
  afterAll(() => server.close());
  const loggedAbout = (cid: string) =>
    logged.filter((line) =>
      JSON.stringify(line.fields ?? {}).includes(`${cid}: its stored bytes do not have its CID`),
    );

  it('answers 500 internal_error saying so, logs which record, and the next reads go on', async () => {
    const cid = await damagedRow({ storage }, 'damaged');
    const answer = await server.request(`/v1/logs/${cid}`, { key });
    expect(answer.status).toBe(500);
    expect(await answer.json()).toMatchObject({
      code: 'internal_error',
      detail: expect.stringContaining(`The stored bytes of log record ${cid} do not hash to its CID`),
    });
    expect(loggedAbout(cid)).toEqual([expect.objectContaining({ message: 'internal error' })]);
    // A record stored as it should be is served right after.
    const scored = (await (
      await server.request('/v1/scoring/score', { key, body: { subject: 'after', context: CONTEXT } })
    ).json()) as ScoreResponse;
    expect((await server.request(`/v1/logs/${scored.log_cid}`, { key })).status).toBe(200);
  });

  it('cuts a run’s NDJSON results after the last item it could read, and logs which record', async () => {
    const created = await server.request('/v1/scoring/runs', {
      method: 'POST',
      key,
      body: { items: ['a', 'b', 'c'].map((subject) => ({ subject, context: CONTEXT })) },
    });
    const run = (await created.json()) as Run;
    const worker = testRunWorker(storage());
    worker.start();
    try {
      await waitForRunEnd(server, key, run.id);
    } finally {
      await worker.stop();
    }
    const cid = testRecord('damaged', 1).cid;
    await storage()
      .db.updateTable('run_items')
      .set({ log_cid: cid })
      .where('run_id', '=', run.id)
      .where('item_index', '=', 1)
      .execute();
    const answer = await server.request(`/v1/scoring/runs/${run.id}/results`, {
      key,
      headers: { Accept: 'application/x-ndjson', 'Accept-Encoding': 'identity' },
    });
    expect(answer.status).toBe(200);
    let text = '';
    const reader = (answer.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    await expect(
      (async () => {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          text += decoder.decode(value, { stream: true });
        }
      })(),
    ).rejects.toThrow();
    expect(
      text
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line).index),
    ).toEqual([0]);
    expect(loggedAbout(cid)).toContainEqual(
      expect.objectContaining({ message: 'error after the response started' }),
    );
  });
});
