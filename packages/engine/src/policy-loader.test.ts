import { describe, expect, it } from 'vitest';
import { FACTORS } from './factor-table.js';
import policyData from './policies.json' with { type: 'json' };
import {
  effectivePolicy,
  loadPolicies,
  POLICIES,
  PolicyFileError,
  parsePolicyFile,
} from './policy-loader.js';

const DEFAULT_ENTRY = {
  description: 'the model',
  weights: {
    payment_history: 350,
    utilization: 300,
    history_length: 150,
    debt_to_income: 100,
    recent_inquiries: 100,
  },
  review_threshold: 550,
  max_band: 250,
};
const fileWith = (policies: Record<string, unknown>) => ({
  policy_version: 'v-test',
  note: 'test',
  policies,
});

describe('the shipped policy file', () => {
  it('when loaded, then it is versioned, marked illustrative, and its default carries the model weights', () => {
    expect(POLICIES.policy_version).toBe('2026-11-01');
    expect(POLICIES.note).toMatch(/not legal advice/);
    expect(Object.keys(POLICIES.entries).sort()).toEqual(['DE', 'US', 'US-CA', 'default']);
    expect(POLICIES.entries.default?.weights).toEqual(
      Object.fromEntries(FACTORS.map((f) => [f.name, f.weight])),
    );
    expect(loadPolicies()).toEqual(POLICIES);
  });

  it('when any entry is resolved, then its weights sum to 1000 and it has a description', () => {
    for (const entry of Object.values(POLICIES.entries)) {
      expect(Object.values(entry.weights).reduce((s, w) => s + w, 0)).toBeCloseTo(1000, 9);
      expect(entry.description.length).toBeGreaterThan(0);
    }
  });

  it('when a caller mutates a returned policy, then the shared policies are unchanged', () => {
    effectivePolicy('FR').weights.utilization = 0;
    expect(effectivePolicy('FR').weights.utilization).toBe(300);
  });
});

describe('effectivePolicy', () => {
  it('when a well-formed code has no entry, then the default policy applies', () => {
    expect(effectivePolicy('FR')).toEqual({
      jurisdiction: 'FR',
      policy_id: 'default',
      policy_version: '2026-11-01',
      weights: {
        payment_history: 350,
        utilization: 300,
        history_length: 150,
        debt_to_income: 100,
        recent_inquiries: 100,
      },
      review_threshold: 550,
      max_band: 250,
    });
  });

  it('when DE disables recent_inquiries, then its 100 is shared out pro rata: w·1000/900', () => {
    const de = effectivePolicy('DE');
    expect(de.policy_id).toBe('DE');
    expect(de.weights).toEqual({
      payment_history: (350 * 1000) / 900, // 388.888…
      utilization: (300 * 1000) / 900, // 333.333…
      history_length: (150 * 1000) / 900, // 166.666…
      debt_to_income: (100 * 1000) / 900, // 111.111…
      recent_inquiries: 0,
    });
    expect([de.review_threshold, de.max_band]).toEqual([550, 250]);
  });

  it('when the full code has an entry, then that entry is used (US-CA)', () => {
    const ca = effectivePolicy('US-CA');
    expect(ca.policy_id).toBe('US-CA');
    expect(ca.weights).toEqual({
      payment_history: 400,
      utilization: 250,
      history_length: 150,
      debt_to_income: 100,
      recent_inquiries: 100,
    });
    expect([ca.review_threshold, ca.max_band]).toEqual([600, 200]);
  });

  it('when a subdivision has no entry, then its country entry applies, else the default', () => {
    expect(effectivePolicy('US-NY')).toMatchObject({
      jurisdiction: 'US-NY',
      policy_id: 'US',
      review_threshold: 600,
    });
    expect(effectivePolicy('DE-BY')).toMatchObject({ jurisdiction: 'DE-BY', policy_id: 'DE' });
    expect(effectivePolicy('FR-75')).toMatchObject({ jurisdiction: 'FR-75', policy_id: 'default' });
    const withoutUs = parsePolicyFile(fileWith({ default: DEFAULT_ENTRY, 'US-CA': { description: 'ca' } }));
    expect(effectivePolicy('US-NY', withoutUs).policy_id).toBe('default');
    expect(effectivePolicy('US-CA', withoutUs).policy_id).toBe('US-CA');
  });

  it.each(['fr', 'FRA', 'US-', 'US-ABCD', 'default', ''])(
    'when the code is malformed (%j), then it throws',
    (code) => {
      expect(() => effectivePolicy(code)).toThrow(RangeError);
    },
  );
});

describe('parsePolicyFile', () => {
  it('when the shipped data is parsed, then it matches POLICIES', () => {
    expect(parsePolicyFile(policyData)).toEqual(POLICIES);
  });

  it.each([
    [
      'a negative weight',
      { default: DEFAULT_ENTRY, DE: { description: 'x', weights: { utilization: -1 } } },
      /DE\.weights\.utilization must be a number/,
    ],
    [
      'an unknown factor',
      { default: DEFAULT_ENTRY, DE: { description: 'x', weights: { utilisation: 0 } } },
      /unknown factor "utilisation"/,
    ],
    [
      'all weights zero',
      {
        default: {
          ...DEFAULT_ENTRY,
          weights: {
            payment_history: 0,
            utilization: 0,
            history_length: 0,
            debt_to_income: 0,
            recent_inquiries: 0,
          },
        },
      },
      /at least one weight must be positive/,
    ],
    [
      'weights over 1000',
      { default: DEFAULT_ENTRY, US: { description: 'x', weights: { payment_history: 4000 } } },
      /US\.weights\.payment_history/,
    ],
    [
      'weights short of 1000 with none disabled',
      { default: DEFAULT_ENTRY, US: { description: 'x', weights: { utilization: 250 } } },
      /sum to 950, not 1000/,
    ],
    [
      'weights above 1000',
      { default: DEFAULT_ENTRY, US: { description: 'x', weights: { utilization: 350 } } },
      /sum to 1050, more than 1000/,
    ],
    ['a missing default', { DE: { description: 'x' } }, /policies\.default is required/],
    [
      'a default missing a weight',
      { default: { ...DEFAULT_ENTRY, weights: { payment_history: 1000 } } },
      /default\.weights\.utilization is required/,
    ],
    [
      'a malformed key',
      { default: DEFAULT_ENTRY, de: { description: 'x' } },
      /policies\.de: the key must be/,
    ],
    [
      'a misspelt entry key',
      { default: DEFAULT_ENTRY, US: { description: 'x', review_treshold: 600 } },
      /unknown key "review_treshold"/,
    ],
    ['a missing description', { default: DEFAULT_ENTRY, US: { review_threshold: 600 } }, /US\.description/],
    [
      'a review threshold out of range',
      { default: DEFAULT_ENTRY, US: { description: 'x', review_threshold: 1200 } },
      /US\.review_threshold/,
    ],
  ])('when the file has %s, then loading throws a PolicyFileError naming it', (_, policies, message) => {
    expect(() => parsePolicyFile(fileWith(policies))).toThrow(PolicyFileError);
    expect(() => parsePolicyFile(fileWith(policies))).toThrow(message);
  });

  it('when the version is missing, then loading throws', () => {
    expect(() => parsePolicyFile({ note: '', policies: { default: DEFAULT_ENTRY } })).toThrow(
      /policy_version/,
    );
    expect(() => parsePolicyFile(null)).toThrow(PolicyFileError);
  });
});
