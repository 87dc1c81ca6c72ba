import type { Policy } from '@scenario-scoring/client';

/** The version of the shipped policy file. */
const POLICY_VERSION = '2026-11-01';

const DEFAULT_WEIGHTS: Policy['weights'] = {
  payment_history: 350,
  utilization: 300,
  history_length: 150,
  debt_to_income: 100,
  recent_inquiries: 100,
};

/**
 * The shipped policy entries as the scoring-model page and the policies' descriptions state them, written out
 * rather than read from the engine: `DE` disables `recent_inquiries`, whose weight is shared out pro rata
 * (each other weight × 1000 / 900); `US` has the default weights and a review threshold of 600; `US-CA`
 * weighs payment history 400 and utilization 250, with threshold 600 and a band of 200.
 */
const ENTRIES: Readonly<Record<string, Pick<Policy, 'weights' | 'review_threshold' | 'max_band'>>> = {
  default: { weights: DEFAULT_WEIGHTS, review_threshold: 550, max_band: 250 },
  DE: {
    weights: {
      payment_history: 388.8888888888889,
      utilization: 333.3333333333333,
      history_length: 166.66666666666666,
      debt_to_income: 111.11111111111111,
      recent_inquiries: 0,
    },
    review_threshold: 550,
    max_band: 250,
  },
  US: { weights: DEFAULT_WEIGHTS, review_threshold: 600, max_band: 250 },
  'US-CA': {
    weights: {
      payment_history: 400,
      utilization: 250,
      history_length: 150,
      debt_to_income: 100,
      recent_inquiries: 100,
    },
    review_threshold: 600,
    max_band: 200,
  },
};

/** The effective policy `GET /v1/scoring/policies/{jurisdiction}` must answer, `policyId` being its entry. */
export function expectedPolicy(jurisdiction: string, policyId: string): Policy {
  const entry = ENTRIES[policyId];
  if (entry === undefined) throw new Error(`no expected policy entry ${policyId}`);
  return { jurisdiction, policy_id: policyId, policy_version: POLICY_VERSION, ...entry };
}

/**
 * The policy entry a jurisdiction is scored under, as the scoring-model page states it: its own entry, else
 * its country's (`US-NY` → `US`), else `default`. A score-log/2 record names it as `policy_id`.
 */
export function expectedPolicyId(jurisdiction: string): string {
  if (ENTRIES[jurisdiction] !== undefined) return jurisdiction;
  const country = jurisdiction.slice(0, 2);
  return ENTRIES[country] !== undefined ? country : 'default';
}
