import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FACTORS } from './factor-table.js';
import { reasonCodeOf } from './model-catalog.js';
import { effectivePolicy, POLICIES } from './policy-loader.js';
import { MAX_REASONS, pointsBelowMax } from './reason-finder.js';
import { scoreBreakdown } from './score-breakdown.js';
import type { ScoreContext } from './score-types.js';
import { scoreContext, scoreScorecard2 } from './scorecard-model.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
/** Property runs are CPU-bound; on a shared, loaded machine they can take longer than vitest's 5 s. */
const PROPERTY_TIMEOUT_MS = 120_000;
/** Every input either missing, at a bound, on a coarse grid (ties likely), or anywhere in its range. */
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
/** A jurisdiction of each shipped policy entry, and one that falls back to `default`. */
const jurisdictions = fc.constantFrom(
  ...Object.keys(POLICIES.entries).map((id) => (id === 'default' ? 'FR' : id)),
  'US-NY',
);
const contexts = fc
  .tuple(jurisdictions, inputs)
  .map(([jurisdiction, values]): ScoreContext => ({ jurisdiction, ...values }));

describe('reasons (properties)', () => {
  it(
    'Σ dᵢ = 1000 − μ, within 1e-9, under every shipped policy',
    () => {
      fc.assert(
        fc.property(contexts, (context) => {
          const breakdown = scoreBreakdown(context, effectivePolicy(context.jurisdiction));
          const sum = pointsBelowMax(breakdown).reduce((s, p) => s + p.points, 0);
          expect(Math.abs(sum - (1000 - breakdown.mu))).toBeLessThan(1e-9);
        }),
        { numRuns: RUNS },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    'each reason has dᵢ > 0 and weight > 0, ranks run 1..n with n ≤ 5, the first four by dᵢ then name, only inquiries fifth',
    () => {
      fc.assert(
        fc.property(contexts, (context) => {
          const policy = effectivePolicy(context.jurisdiction);
          const breakdown = scoreBreakdown(context, policy);
          const d = new Map(pointsBelowMax(breakdown).map((p) => [p.name, p]));
          const { reasons, levers } = scoreScorecard2(context, policy);
          expect(reasons.length).toBeLessThanOrEqual(MAX_REASONS + 1);
          expect(reasons.map((r) => r.rank)).toEqual(reasons.map((_, i) => i + 1));
          expect(new Set(reasons.map((r) => r.factor)).size).toBe(reasons.length);
          for (const r of reasons) {
            const points = d.get(r.factor);
            expect(policy.weights[r.factor]).toBeGreaterThan(0);
            expect(points).toBeDefined();
            expect(Math.round((points?.points ?? 0) * 1e6)).toBeGreaterThan(0);
            expect(r.code).toBe(reasonCodeOf(r.factor, points?.present ?? false));
            expect(r.points_below_max).toBe(Math.round((points?.points ?? 0) * 10) / 10);
            expect(r.lever).toBe(levers.some((l) => l.name === r.factor) ? r.factor : undefined);
          }
          const micro = (name: string) => Math.round((d.get(name as never)?.points ?? 0) * 1e6);
          for (let i = 1; i < Math.min(reasons.length, MAX_REASONS); i++) {
            const [a, b] = [reasons[i - 1]?.factor as string, reasons[i]?.factor as string];
            expect(micro(a) > micro(b) || (micro(a) === micro(b) && a < b)).toBe(true);
          }
          if (reasons.length === MAX_REASONS + 1)
            expect(reasons[MAX_REASONS]?.factor).toBe('recent_inquiries');
          // None left out: every factor with dᵢ > 0 that is not a reason ranks after the fourth.
          const fourth = reasons[Math.min(reasons.length, MAX_REASONS) - 1];
          for (const [name, p] of d) {
            if (Math.round(p.points * 1e6) <= 0 || reasons.some((r) => r.factor === name)) continue;
            expect(fourth).toBeDefined();
            expect(name).not.toBe('recent_inquiries');
            const f = fourth?.factor as string;
            expect(micro(f) > micro(name) || (micro(f) === micro(name) && f < name)).toBe(true);
          }
        }),
        { numRuns: RUNS },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    'reasons are a function of the context: the same context, or its keys in another order, gives the same reasons',
    () => {
      fc.assert(
        fc.property(contexts, (context) => {
          const policy = effectivePolicy(context.jurisdiction);
          const reversed = Object.fromEntries(Object.entries(context).reverse()) as unknown as ScoreContext;
          const first = scoreScorecard2(context, policy).reasons;
          expect(
            scoreScorecard2(structuredClone(context), effectivePolicy(context.jurisdiction)).reasons,
          ).toEqual(first);
          expect(scoreScorecard2(reversed, policy).reasons).toEqual(first);
        }),
        { numRuns: RUNS },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    'scorecard-2 has the scores and levers of scorecard-1; only the ranking and markers of explain may differ',
    () => {
      fc.assert(
        fc.property(contexts, (context) => {
          const policy = effectivePolicy(context.jurisdiction);
          const v1 = scoreContext(context, policy);
          const v2 = scoreScorecard2(context, policy);
          expect(v2.levers).toEqual(v1.levers);
          expect(v2.scenarios.map((s) => [s.name, s.score, s.explain.length])).toEqual(
            v1.scenarios.map((s) => [s.name, s.score, s.explain.length]),
          );
        }),
        { numRuns: RUNS },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );
});
