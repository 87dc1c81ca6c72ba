import type { Problem, ScoreResponse } from '@scenario-scoring/api-types';
import { cidOfBytes } from '@scenario-scoring/engine';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';

const UNKNOWN_CID = 'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e';

forEachDatabase('GET /v1/logs/{cid}', ({ storage }) => {
  let server: TestServer;
  let alice: string;
  let bob: string;
  let cid: string;
  beforeAll(async () => {
    server = await startTestServer({ storage: storage() });
    ({ key: alice } = await testFeatures(storage()).keys.create('alice'));
    ({ key: bob } = await testFeatures(storage()).keys.create('bob'));
    const scored = await server.request('/v1/scoring/score', {
      key: alice,
      body: { subject: 'log-route', context: { jurisdiction: 'GB', on_time_ratio: 0.5 } },
    });
    cid = ((await scored.json()) as ScoreResponse).log_cid;
  });
  afterAll(() => server.close());

  it("returns the record's exact bytes as application/json", async () => {
    const response = await server.request(`/v1/logs/${cid}`, { key: alice });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    const bytes = new Uint8Array(await response.arrayBuffer());
    expect(cidOfBytes(bytes)).toBe(cid);
    expect(Number(response.headers.get('content-length'))).toBe(bytes.length);
  });

  it("answers another tenant's CID like an unknown one: 404 not_found", async () => {
    for (const [key, path] of [
      [bob, cid],
      [alice, UNKNOWN_CID],
    ] as const) {
      const response = await server.request(`/v1/logs/${path}`, { key });
      expect(response.status).toBe(404);
      const problem = (await response.json()) as Problem;
      expect(problem).toMatchObject({ code: 'not_found', title: 'Not found' });
      expect(problem.detail).toBe(`No log record with CID ${path} exists for this API key.`);
    }
  });

  it('refuses a cid that is not a CID with 400 validation_failed', async () => {
    for (const notACid of ['abc', 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG', `${cid}x`, '%E0%A4%A']) {
      const response = await server.request(`/v1/logs/${notACid}`, { key: alice });
      expect(response.status).toBe(400);
      const problem = (await response.json()) as Problem;
      expect(problem.code).toBe('validation_failed');
      expect(problem.errors?.[0]?.path).toMatch(/^\/path/);
      expect(problem.detail).toMatch(
        /^The request has 1 invalid field: \/path.* (must match pattern|is not valid percent-encoding)/,
      );
    }
  });
});
