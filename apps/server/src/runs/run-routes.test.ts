import type { Problem, Run, RunItemResult, RunResultList, ScoreRequest } from '@scenario-scoring/api-types';
import { cidOfBytes, effectivePolicy, scoreScorecard2 } from '@scenario-scoring/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { testRunWorker, waitForRunEnd } from '../../test/support/test-run-worker.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';
import type { RunWorker } from './run-worker.js';

const RUN_ID = /^run_[0-9A-HJKMNP-TV-Z]{26}$/;

/** Item `i` of a large run: distinct subjects and inputs, some thin, across jurisdictions. */
function item(i: number): ScoreRequest {
  const jurisdictions = ['DE', 'US', 'US-CA', 'FR'];
  const context: ScoreRequest['context'] = { jurisdiction: jurisdictions[i % 4] as string };
  if (i % 3 !== 0) context.on_time_ratio = (i % 21) / 20;
  if (i % 5 !== 0) context.utilization = (i % 11) / 10;
  if (i % 2 === 0) context.history_months = i % 240;
  if (i % 7 !== 0) context.debt_to_income = (i % 9) / 10;
  if (i % 4 !== 1) context.inquiries_12m = i % 8;
  return { subject: `subject-${i}`, context };
}

forEachDatabase('batch scoring runs over HTTP', ({ storage }) => {
  let server: TestServer;
  let worker: RunWorker;
  let key: string;
  let otherKey: string;
  beforeAll(async () => {
    worker = testRunWorker(storage(), { config: { batchSize: 200 } });
    worker.start();
    server = await startTestServer({ storage: storage(), workers: [worker] });
    ({ key } = await testFeatures(storage()).keys.create('runs'));
    ({ key: otherKey } = await testFeatures(storage()).keys.create('runs-other'));
  });
  afterAll(async () => {
    await server.close();
    await worker.stop();
  });

  const createRun = (body: unknown, headers?: Record<string, string>) =>
    server.request('/v1/scoring/runs', { key, body, ...(headers && { headers }) });

  it('when 1,000 items are submitted, then the run completes and its results page through in order, each equal to a synchronous scoring and logged', async () => {
    const items = Array.from({ length: 1000 }, (_, i) => item(i));
    const created = await createRun({ items });
    expect(created.status).toBe(202);
    const queued = (await created.json()) as Run;
    expect(queued).toMatchObject({ id: expect.stringMatching(RUN_ID), status: 'queued', item_count: 1000 });
    expect(created.headers.get('location')).toBe(`/v1/scoring/runs/${queued.id}`);

    const run = await waitForRunEnd(server, key, queued.id);
    const expected = items.map((it) => ({
      result: scoreScorecard2(it.context, effectivePolicy(it.context.jurisdiction)),
    }));
    expect(run).toMatchObject({ status: 'completed', error: null, item_count: 1000 });
    expect(run.counts.succeeded).toBe(1000);
    expect(run.counts.failed).toBe(0);
    expect(run.started_at).not.toBeNull();
    expect(run.completed_at).not.toBeNull();

    const seen: RunItemResult[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor ? `?limit=300&cursor=${cursor}` : '?limit=300';
      const page = (await (
        await server.request(`/v1/scoring/runs/${queued.id}/results${query}`, { key })
      ).json()) as RunResultList;
      seen.push(...(page.data as RunItemResult[]));
      cursor = page.next_cursor;
    } while (cursor !== null);
    expect(seen.map((r) => r.index)).toEqual(items.map((_, i) => i));
    // A large page goes gzip-compressed to a client taking it, the same JSON; a small one as it is.
    const pageOf = (limit: number, encoding: string) =>
      server.request(`/v1/scoring/runs/${queued.id}/results?limit=${limit}`, {
        key,
        headers: { 'accept-encoding': encoding },
      });
    const plain = await pageOf(1000, 'identity');
    const zipped = await pageOf(1000, 'gzip');
    expect(plain.headers.get('content-encoding')).toBeNull();
    expect(zipped.headers.get('content-encoding')).toBe('gzip');
    expect(zipped.headers.get('vary')).toMatch(/Accept-Encoding/);
    expect(Number(zipped.headers.get('content-length'))).toBeLessThan(
      Number(plain.headers.get('content-length')) / 5,
    );
    expect(await zipped.json()).toEqual(await plain.json());
    const small = await pageOf(1, 'gzip');
    expect(small.headers.get('content-encoding')).toBeNull();
    expect(small.headers.get('vary')).toMatch(/Accept-Encoding/);
    for (const [i, result] of seen.entries()) {
      expect(result.status).toBe('ok');
      expect(result.subject).toBe(items[i]?.subject);
      expect(result.result).toEqual(expected[i]?.result);
    }
    expect(new Set(seen.map((r) => r.log_cid)).size).toBe(1000);
    expect(run.counts.escalated).toBe(seen.filter((r) => r.escalated).length);
    // Read back from the canonical log record (sorted keys), but in the order the API documents.
    expect(Object.keys(seen[0]?.result.scenarios[0] ?? {})).toEqual(['name', 'score', 'explain']);

    for (const i of [0, 499, 999]) {
      const log = await server.request(`/v1/logs/${seen[i]?.log_cid}`, { key });
      expect(log.status).toBe(200);
      const bytes = new Uint8Array(await log.arrayBuffer());
      expect(cidOfBytes(bytes)).toBe(seen[i]?.log_cid);
      // Each item is its own score-log/2 record: the run, the item's index, the time it was scored.
      const record = JSON.parse(new TextDecoder().decode(bytes));
      expect(record).toMatchObject({
        schema: 'score-log/2',
        kind: 'run_item',
        run_id: queued.id,
        item: i,
        subject: items[i]?.subject,
        context: items[i]?.context,
        result: expected[i]?.result,
      });
      expect(record).not.toHaveProperty('request_id');
      expect(Date.parse(record.scored_at)).toBeGreaterThanOrEqual(Date.parse(run.started_at ?? ''));
      expect(Date.parse(record.scored_at)).toBeLessThanOrEqual(Date.parse(run.completed_at ?? ''));
    }
  });

  it('when a deadline is given, then deadline_at is that many seconds after created_at', async () => {
    const run = (await (await createRun({ items: [item(1)], deadline_seconds: 600 })).json()) as Run;
    expect(Date.parse(run.deadline_at ?? '') - Date.parse(run.created_at)).toBe(600_000);
  });

  describe('when the input is bad', () => {
    const expectValidation = async (response: Response, paths: string[]) => {
      expect(response.status).toBe(400);
      const problem = (await response.json()) as Problem;
      expect(problem.code).toBe('validation_failed');
      for (const path of paths) expect(problem.errors?.map((e) => e.path)).toContain(path);
    };

    it('refuses 0 items and 1,001 items, naming /body/items', async () => {
      await expectValidation(await createRun({ items: [] }), ['/body/items']);
      const tooMany = Array.from({ length: 1001 }, (_, i) => item(i));
      await expectValidation(await createRun({ items: tooMany }), ['/body/items']);
    });

    it('refuses a run with an invalid item, naming its index and path', async () => {
      const items = [
        item(0),
        item(1),
        item(2),
        { subject: 's', context: { jurisdiction: 'DE', utilisation: 1 } },
      ];
      await expectValidation(await createRun({ items }), ['/body/items/3/context/utilisation']);
    });

    it("answers an unknown run id and another tenant's run id with 404", async () => {
      const unknown = await server.request('/v1/scoring/runs/run_01JZ4VB2C4D6E8F0G2H4J6K8M0', { key });
      expect(unknown.status).toBe(404);
      const run = (await (await createRun({ items: [item(3)] })).json()) as Run;
      for (const path of [`/v1/scoring/runs/${run.id}`, `/v1/scoring/runs/${run.id}/results`]) {
        const other = await server.request(path, { key: otherKey });
        expect(other.status).toBe(404);
        expect(((await other.json()) as Problem).code).toBe('not_found');
      }
    });

    it('refuses a cursor it did not make, naming /query/cursor', async () => {
      const run = (await (await createRun({ items: [item(4)] })).json()) as Run;
      const response = await server.request(`/v1/scoring/runs/${run.id}/results?cursor=bm9wZQ`, { key });
      await expectValidation(response, ['/query/cursor']);
    });

    it('replays a reused Idempotency-Key with the same body, and refuses it with another body (422)', async () => {
      const headers = { 'idempotency-key': 'run-key-1' };
      const first = await createRun({ items: [item(5)] }, headers);
      const again = await createRun({ items: [item(5)] }, headers);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(await again.json()).toEqual(await first.json());
      const other = await createRun({ items: [item(6)] }, headers);
      expect(other.status).toBe(422);
      expect(((await other.json()) as Problem).code).toBe('idempotency_key_reused');
    });
  });
});
