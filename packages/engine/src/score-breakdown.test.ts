import { describe, expect, it } from 'vitest';
import { FACTORS } from './factor-table.js';
import { effectivePolicy } from './policy-loader.js';
import { SCENARIO_NAMES, scoreBreakdown, toScore } from './score-breakdown.js';
import type { Policy, ScoreContext } from './score-types.js';
import { scoreContext } from './scorecard-model.js';

const Z = 1.2815515655446004;

/** mulberry32: a tiny seeded PRNG, so the sweep is the same on every run. */
function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A random valid context: each input present with probability ½, anywhere in its valid range. */
function randomContext(random: () => number, jurisdiction: string): ScoreContext {
  const context: Record<string, number | string> = { jurisdiction };
  for (const f of FACTORS) {
    if (random() < 0.5) continue;
    const [min, max] = f.range;
    // Bias towards the interesting part of each range, where goodness is not clamped.
    const span =
      random() < 0.8
        ? Math.min(max, f.key === 'history_months' ? 150 : f.key === 'inquiries_12m' ? 8 : 1.2)
        : max;
    const value = min + random() * (span - min);
    context[f.key] = f.integer ? Math.round(value) : value;
  }
  return context as unknown as ScoreContext;
}

describe('scoreBreakdown', () => {
  it('when all five inputs are present, then μ, sd and raw(q) follow the formulas', () => {
    const b = scoreBreakdown(
      {
        jurisdiction: 'FR',
        on_time_ratio: 0.96,
        utilization: 0.27,
        history_months: 36,
        debt_to_income: 0.42,
        inquiries_12m: 1,
      },
      effectivePolicy('FR'),
    );
    // μ = 350·0.8 + 300·0.7 + 150·0.3 + 100·0.3 + 100·(5/6) = 280 + 210 + 45 + 30 + 83.333… = 648.333…
    expect(b.mu).toBeCloseTo(648.3333333333, 9);
    // sd = √((350·0.05)² + (300·0.05)² + (150·0.05)² + (100·0.05)² + (100·0.05)²) = √637.5
    expect(b.sd).toBeCloseTo(Math.sqrt(17.5 ** 2 + 15 ** 2 + 7.5 ** 2 + 5 ** 2 + 5 ** 2), 12);
    expect(b.raw.p10).toBeCloseTo(615.975742420875, 9);
    expect(b.raw.p90).toBeCloseTo(680.6909242457917, 9);
    expect(b.factors.map((f) => [f.name, f.x])).toEqual([
      ['payment_history', expect.closeTo(0.8, 12)],
      ['utilization', expect.closeTo(0.7, 12)],
      ['history_length', expect.closeTo(0.3, 12)],
      ['debt_to_income', expect.closeTo(0.3, 12)],
      ['recent_inquiries', expect.closeTo(5 / 6, 12)],
    ]);
  });

  it('when no input is present, then μ = 500 and sd = √Σ(w·0.25)²', () => {
    const b = scoreBreakdown({ jurisdiction: 'FR' }, effectivePolicy('FR'));
    const sd = Math.sqrt(
      (350 * 0.25) ** 2 + (300 * 0.25) ** 2 + (150 * 0.25) ** 2 + (100 * 0.25) ** 2 + (100 * 0.25) ** 2,
    );
    expect(b.mu).toBe(500);
    expect(b.sd).toBeCloseTo(sd, 12);
    expect(b.sd).toBeCloseTo(126.2438117295, 9);
    expect(b.raw.p10).toBeCloseTo(500 - Z * sd, 9);
    expect(b.factors.every((f) => f.sigma === 0.25 && f.x === 0.5 && !f.present)).toBe(true);
  });

  it('when a factor is disabled by the policy, then it is left out and its input is ignored', () => {
    const with1 = scoreBreakdown({ jurisdiction: 'DE', inquiries_12m: 1 }, effectivePolicy('DE'));
    const without = scoreBreakdown({ jurisdiction: 'DE' }, effectivePolicy('DE'));
    expect(with1.factors.map((f) => f.name)).not.toContain('recent_inquiries');
    expect(with1).toEqual(without);
  });

  it.each([
    ['an empty file', { jurisdiction: 'FR' }, 'FR'],
    [
      'a full file',
      {
        jurisdiction: 'FR',
        on_time_ratio: 0.96,
        utilization: 0.27,
        history_months: 36,
        debt_to_income: 0.42,
        inquiries_12m: 1,
      },
      'FR',
    ],
    ['a thin file', { jurisdiction: 'US', utilization: 0.6, inquiries_12m: 4 }, 'US'],
    [
      'clamped inputs',
      { jurisdiction: 'US-CA', on_time_ratio: 0.3, utilization: 4, history_months: 600 },
      'US-CA',
    ],
    [
      'a disabled factor',
      { jurisdiction: 'DE', on_time_ratio: 0.99, debt_to_income: 0.1, inquiries_12m: 9 },
      'DE',
    ],
  ] as const)(
    'when scoring %s, then the attributions sum to raw(q) − 500 in every scenario',
    (_, context, code) => {
      const b = scoreBreakdown(context, effectivePolicy(code));
      for (const q of SCENARIO_NAMES) {
        const sum = b.factors.reduce((s, f) => s + f.attribution[q], 0);
        expect(Math.abs(sum - (b.raw[q] - 500))).toBeLessThan(1e-9);
      }
    },
  );

  // About 0.3 s alone; the timeout leaves room for a machine busy with the rest of the suite.
  it('when sweeping 3000 random contexts, then p10 ≤ p50 ≤ p90, the attributions sum, and scores are one-decimal in [0, 1000]', {
    timeout: 30_000,
  }, () => {
    const random = seededRandom(20261101);
    const codes = ['FR', 'DE', 'US-CA', 'US-NY'];
    for (let i = 0; i < 3000; i++) {
      const code = codes[i % codes.length] ?? 'FR';
      const policy: Policy = effectivePolicy(code);
      const context = randomContext(random, code);
      const b = scoreBreakdown(context, policy);
      const [p10, p50, p90] = scoreContext(context, policy).scenarios;
      expect(p10.score).toBeLessThanOrEqual(p50.score);
      expect(p50.score).toBeLessThanOrEqual(p90.score);
      for (const s of [p10, p50, p90]) {
        expect(s.score).toBeGreaterThanOrEqual(0);
        expect(s.score).toBeLessThanOrEqual(1000);
        expect(Math.round(s.score * 10) / 10).toBe(s.score);
        expect(s.explain.length).toBe(Math.min(4, b.factors.length));
      }
      for (const q of SCENARIO_NAMES) {
        const sum = b.factors.reduce((s, f) => s + f.attribution[q], 0);
        expect(Math.abs(sum - (b.raw[q] - 500))).toBeLessThan(1e-9);
      }
    }
  });
});

describe('toScore', () => {
  it('when every input is at its best or worst, then the scores are clamped to [0, 1000]', () => {
    // Best: μ = 1000, z·sd = 32.357591 → p10 967.642409 → 967.6, p50 1000, p90 1032.36 → clamped to 1000.
    const best = scoreContext(
      {
        jurisdiction: 'FR',
        on_time_ratio: 1,
        utilization: 0,
        history_months: 120,
        debt_to_income: 0,
        inquiries_12m: 0,
      },
      effectivePolicy('FR'),
    );
    expect(best.scenarios.map((s) => s.score)).toEqual([967.6, 1000, 1000]);
    // p50 attributions 175, 150, 75 (exactly the ⇈ threshold), then a tie at 50 resolved by name.
    expect(best.scenarios[1].explain).toEqual([
      'factor:payment_history⇈',
      'factor:utilization⇈',
      'factor:history_length⇈',
      'factor:debt_to_income↑',
    ]);
    expect(best.levers).toEqual([]);

    // Worst: μ = 0 → p10 −32.36 clamped to 0, p50 0, p90 32.357591 → 32.4. No step moves any x off 0.
    const worst = scoreContext(
      {
        jurisdiction: 'FR',
        on_time_ratio: 0,
        utilization: 10,
        history_months: 0,
        debt_to_income: 10,
        inquiries_12m: 100,
      },
      effectivePolicy('FR'),
    );
    expect(worst.scenarios.map((s) => s.score)).toEqual([0, 0, 32.4]);
    expect(worst.levers).toEqual([]);
  });

  it('when raw is outside [0, 1000], then it is clamped; inside, it is rounded to one decimal', () => {
    expect(toScore(-32.357)).toBe(0);
    expect(toScore(1032.357)).toBe(1000);
    expect(toScore(615.9757)).toBe(616);
    expect(toScore(680.6909)).toBe(680.7);
    expect(toScore(338.25)).toBe(338.3);
  });
});
