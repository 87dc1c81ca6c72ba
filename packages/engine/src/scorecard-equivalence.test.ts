import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { contextIssues, isValidContext } from './context-validator.js';
import { FACTORS, type FactorName } from './factor-table.js';
import { effectivePolicy } from './policy-loader.js';
import { scoreBreakdown, toScore } from './score-breakdown.js';
import type { Lever, Policy, Scenario, ScoreContext, ScoreResult } from './score-types.js';
import { scoreContext } from './scorecard-model.js';

/**
 * The model as first written, straight from scoring-model.md and kept here as the reference: every lever
 * is a full rescoring of the moved context, explain sorts a copy of all attributions. The engine computes
 * the same numbers with fewer allocations (p50-only rescoring, an insertion sort); these properties check
 * that it gives exactly the same result, bit for bit, on random contexts under every shipped policy.
 */
const Z = { p10: -1.2815515655446004, p50: 0, p90: 1.2815515655446004 } as const;

function referenceScore(context: ScoreContext, policy: Pick<Policy, 'weights'>): ScoreResult {
  const before = scoreBreakdown(context, policy);
  const scenarios = (['p10', 'p50', 'p90'] as const).map(
    (q): Scenario => ({
      name: q,
      score: toScore(before.mu + Z[q] * before.sd),
      explain: [...before.factors]
        .map((f) => ({
          name: f.name,
          value: f.weight * (f.x + (Z[q] * f.weight * f.sigma ** 2) / before.sd - 0.5),
        }))
        .sort((a, b) => Math.abs(b.value) - Math.abs(a.value) || (a.name < b.name ? -1 : 1))
        .slice(0, 4)
        .map((a) => `factor:${a.name}${marker(a.value)}`),
    }),
  ) as [Scenario, Scenario, Scenario];
  const levers: Lever[] = [];
  for (const f of before.factors) {
    const spec = FACTORS.find((s) => s.name === f.name);
    const value = context[f.key];
    if (!spec?.actionable || spec.direction === null || spec.step === null) continue;
    if (value === undefined || f.x >= 1) continue;
    const [min, max] = spec.range;
    const moved = Math.min(
      max,
      Math.max(min, spec.direction === '+' ? value + spec.step : value - spec.step),
    );
    const after = scoreBreakdown({ ...context, [f.key]: moved }, policy);
    const delta = Math.round((after.score.p50 - before.score.p50) * 10) / 10;
    if (delta <= 0) continue;
    const step = Math.round(Math.abs(moved - value) * 1e6) / 1e6;
    // An input within 5e-7 of its bound moves by a step that rounds to 0: no lever (the contract: step > 0).
    if (step <= 0) continue;
    levers.push({ name: f.name, direction: spec.direction, delta, step });
  }
  levers.sort((a, b) => b.delta - a.delta || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { scenarios, levers: levers.slice(0, 3) };
}

function marker(a: number): string {
  return a <= -75 ? '⇊' : a <= -15 ? '↓' : a < 15 ? '≈' : a < 75 ? '↑' : '⇈';
}

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
/** Property runs are CPU-bound; on a shared, loaded machine they can take longer than vitest's 5 s. */
const PROPERTY_TIMEOUT_MS = 120_000;
/** Every input either missing, at a bound, on a lever's step grid, or anywhere in its range. */
const inputs = fc.record(
  Object.fromEntries(
    FACTORS.map((f) => {
      const [min, max] = f.range;
      const value = f.integer
        ? fc.oneof(fc.constantFrom(min, max), fc.integer({ min, max }), fc.integer({ min, max: 12 }))
        : fc.oneof(
            fc.constantFrom(min, max),
            fc.double({ min, max, noNaN: true }),
            fc.integer({ min: 0, max: 100 }).map((n) => Math.min(max, n / 100)),
          );
      return [f.key, value];
    }),
  ) as Record<string, fc.Arbitrary<number>>,
  { requiredKeys: [] },
);
const jurisdiction = fc.constantFrom('DE', 'US', 'US-CA', 'US-NY', 'FR', 'GB', 'ZZ');

describe('scoreContext against the reference model', () => {
  it(
    'when given any valid context, then scores, explain and levers are exactly the reference’s',
    () => {
      fc.assert(
        fc.property(inputs, jurisdiction, (values, code) => {
          const context = { jurisdiction: code, ...values } as ScoreContext;
          const policy = effectivePolicy(code);
          expect(scoreContext(context, policy)).toEqual(referenceScore(context, policy));
        }),
        { numRuns: RUNS },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    'when a policy disables factors, then the result is still exactly the reference’s',
    () => {
      const names = FACTORS.map((f) => f.name);
      const weights = fc
        .tuple(...names.map(() => fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 600 }))))
        .filter((ws) => ws.some((w) => w > 0))
        .map((ws) => Object.fromEntries(names.map((n, i) => [n, ws[i]])) as Record<FactorName, number>);
      fc.assert(
        fc.property(inputs, weights, (values, w) => {
          const context = { jurisdiction: 'DE', ...values } as ScoreContext;
          expect(scoreContext(context, { weights: w })).toEqual(referenceScore(context, { weights: w }));
        }),
        { numRuns: Math.ceil(RUNS / 2) },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );
});

describe('isValidContext', () => {
  it(
    'when given any value, then it agrees with contextIssues finding nothing',
    () => {
      const value = fc.oneof(
        fc.double(),
        fc.integer({ min: -5, max: 1300 }),
        fc.string(),
        fc.constant(undefined),
        fc.boolean(),
      );
      const key = fc.constantFrom('jurisdiction', 'utilisation', ...FACTORS.map((f) => f.key));
      const context = fc.oneof(
        fc.dictionary(key, value),
        fc
          .record({ jurisdiction: fc.oneof(jurisdiction, fc.string()) })
          .chain((base) => fc.dictionary(key, value).map((rest) => ({ ...base, ...rest }))),
        inputs.map((values) => ({ jurisdiction: 'DE', ...values })),
        fc.anything(),
      );
      fc.assert(
        fc.property(context, (c) => {
          expect(isValidContext(c)).toBe(contextIssues(c).length === 0);
        }),
        { numRuns: RUNS },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );
});
