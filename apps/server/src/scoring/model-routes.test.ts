import type { ModelCatalog, Problem, ScoringModel } from '@scenario-scoring/api-types';
import { MODEL_CATALOG } from '@scenario-scoring/engine';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';
import { loadContract } from '../common/contract.js';

/** A named example of the bundled contract (Prism serves these). */
const example = (name: string) =>
  (loadContract().document.components?.examples?.[name] as { value: unknown } | undefined)?.value;

forEachDatabase('GET /v1/scoring/models', ({ storage }) => {
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    server = await startTestServer({ storage: storage() });
    ({ key } = await testFeatures(storage()).keys.create('models', 'log:read'));
  });
  afterAll(() => server.close());

  it('when the catalog is asked for (with a log:read key), then it is the engine’s, as the contract’s example shows it', async () => {
    const response = await server.request('/v1/scoring/models', { key });
    expect(response.status).toBe(200);
    const catalog = (await response.json()) as ModelCatalog;
    expect(catalog).toEqual(JSON.parse(JSON.stringify(MODEL_CATALOG)));
    expect(catalog).toEqual(example('ModelCatalog'));
    expect(catalog.models.map((m) => [m.model_version, m.status])).toEqual([
      ['scorecard-2', 'current'],
      ['scorecard-1', 'retired'],
    ]);
  });

  it('when one version is asked for, then it has its reason method and codes in both languages', async () => {
    const response = await server.request('/v1/scoring/models/scorecard-2', { key });
    expect(response.status).toBe(200);
    const model = (await response.json()) as ScoringModel;
    expect(model).toEqual(example('ModelScorecard2'));
    expect(model.reason_method).toMatchObject({
      reason_code_algorithm: 'pointsBelow',
      baseline_method: 'max',
    });
    expect(model.reason_codes.find((c) => c.code === 'PH1')?.statements).toEqual({
      en: 'Too few payments were made on time',
      de: 'Zu wenige Zahlungen wurden pünktlich geleistet',
    });
    const retired = (await (
      await server.request('/v1/scoring/models/scorecard-1', { key })
    ).json()) as ScoringModel;
    expect(retired).toMatchObject({ status: 'retired', reason_method: null, reason_codes: [] });
  });

  it('when the version is unknown, then 404 not_found naming the catalog', async () => {
    const response = await server.request('/v1/scoring/models/scorecard-9', { key });
    expect(response.status).toBe(404);
    const problem = (await response.json()) as Problem;
    expect(problem.code).toBe('not_found');
    expect(problem.detail).toContain('GET /v1/scoring/models');
    expect(problem.detail).toContain('"scorecard-9"');
    // A control character in the path is quoted in the detail, never echoed raw.
    const nul = await server.request('/v1/scoring/models/bad%00version', { key });
    expect(nul.status).toBe(404);
    const detail = ((await nul.json()) as Problem).detail ?? '';
    expect(detail).toContain('"bad\\u0000version"');
    expect(detail).not.toContain('\u0000');
  });
});
