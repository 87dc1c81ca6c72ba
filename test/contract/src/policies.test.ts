import type { ScoringClient } from '@scenario-scoring/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, getPolicy } from './harness/contract-calls.js';
import { clientOf } from './harness/contract-client.js';
import { expectedPolicy } from './harness/expected-policies.js';
import { startTarget, type Target } from './harness/targets.js';

let target: Target;
let client: ScoringClient;
beforeAll(async () => {
  target = await startTarget();
  client = clientOf(target);
});
afterAll(() => target?.stop());

describe('the effective policy of a jurisdiction', () => {
  it('is its own entry when it has one (DE disables recent_inquiries and shares its weight out)', async () => {
    const { data } = await getPolicy(client, 'DE', { status: 200, example: 'OwnEntry' });
    expect(data).toEqual(expectedPolicy('DE', 'DE'));
    expect(data?.weights.recent_inquiries).toBe(0);
  });

  it('is the default entry for a country without one (FR)', async () => {
    const { data } = await getPolicy(client, 'FR', { status: 200, example: 'Default' });
    expect(data).toEqual(expectedPolicy('FR', 'default'));
    expect(data?.policy_id).toBe('default');
  });

  // The contract documents two examples (OwnEntry, Default); the mock answers with one of them, so the
  // values are compared on the server only.
  it.each([
    ['US-NY', 'US'],
    ['US-CA', 'US-CA'],
    ['US', 'US'],
    ['DE-BY', 'DE'],
    ['GB', 'default'],
    ['FR-75C', 'default'],
  ])('of %s is the %s entry', async (jurisdiction, policyId) => {
    const { data } = await getPolicy(client, jurisdiction, { status: 200, example: 'OwnEntry' });
    if (target.kind === 'server') {
      expect(data).toEqual(expectedPolicy(jurisdiction, policyId));
      expect(data?.policy_id).toBe(policyId);
      expect(data?.jurisdiction).toBe(jurisdiction);
    }
  });

  it('has weights that sum to 1000', async () => {
    const { data } = await getPolicy(client, 'DE', { status: 200, example: 'OwnEntry' });
    const total = Object.values(data?.weights ?? {}).reduce((sum, weight) => sum + weight, 0);
    expect(total).toBeCloseTo(1000, 9);
  });
});

describe('a malformed jurisdiction code', () => {
  it.each(['d3', 'de', 'DEU', 'US-CALIF', 'D', 'US-', 'us-ny'])(
    'is refused (%s) with 400 validation_failed naming /path/jurisdiction',
    async (jurisdiction) => {
      const { error } = await getPolicy(client, jurisdiction, { status: 400, example: 'InvalidParameter' });
      expectProblem(target, error, {
        code: 'validation_failed',
        paths: ['/path/jurisdiction'],
        instance: `/v1/scoring/policies/${jurisdiction}`,
      });
    },
  );
});
