import type { Policy, Problem } from '@scenario-scoring/api-types';
import { effectivePolicy } from '@scenario-scoring/engine';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';

forEachDatabase('GET /v1/scoring/policies/{jurisdiction}', ({ storage }) => {
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    server = await startTestServer({ storage: storage() });
    ({ key } = await testFeatures(storage()).keys.create('policies'));
  });
  afterAll(() => server.close());

  const policy = async (code: string) => {
    const response = await server.request(`/v1/scoring/policies/${code}`, { key });
    expect(response.status).toBe(200);
    return (await response.json()) as Policy;
  };

  it('answers a jurisdiction with its own entry', async () => {
    expect(await policy('DE')).toEqual({ ...effectivePolicy('DE'), policy_id: 'DE' });
  });

  it("falls back to the country's entry for a subdivision", async () => {
    expect(await policy('US-NY')).toMatchObject({ jurisdiction: 'US-NY', policy_id: 'US' });
  });

  it('falls back to default for a jurisdiction without an entry', async () => {
    expect(await policy('FR')).toEqual({ ...effectivePolicy('FR'), policy_id: 'default' });
  });

  it('refuses a malformed code with 400 validation_failed naming the path parameter', async () => {
    const response = await server.request('/v1/scoring/policies/germany', { key });
    expect(response.status).toBe(400);
    const problem = (await response.json()) as Problem;
    expect(problem).toMatchObject({ code: 'validation_failed' });
    expect(problem.errors).toEqual([
      { path: '/path/jurisdiction', message: 'must match pattern "^[A-Z]{2}(-[A-Z0-9]{1,3})?$"' },
    ]);
  });
});
