import { describe, expect, it } from 'vitest';
import { InvalidContextError } from './context-validator.js';
import { canonicalBytes } from './log-record.js';
import { effectivePolicy } from './policy-loader.js';
import type { ScoreContext } from './score-types.js';
import { scoreContext } from './scorecard-model.js';

// The full-file example used throughout. Goodness by hand:
//   payment_history  (0.96 − 0.8) / 0.2 = 0.8      w 350 → 280
//   utilization      1 − 0.27 / 0.9     = 0.7      w 300 → 210
//   history_length   36 / 120           = 0.3      w 150 →  45
//   debt_to_income   1 − 0.42 / 0.6     = 0.3      w 100 →  30
//   recent_inquiries 1 − 1 / 6          = 5/6      w 100 →  83.333…
//   μ = 648.333…;  sd = √Σ(w·0.05)² = 0.05·√255000 = 25.248762…;  z·sd = 1.2815515655446004·25.248762… = 32.357591…
//   p10 = 615.9757… → 616.0;  p50 = 648.3;  p90 = 680.6909… → 680.7
const FULL_FILE: ScoreContext = {
  jurisdiction: 'FR',
  on_time_ratio: 0.96,
  utilization: 0.27,
  history_months: 36,
  debt_to_income: 0.42,
  inquiries_12m: 1,
};

describe('scoreContext', () => {
  it('when all five inputs are present, then scores, explain and levers match the hand computation', () => {
    const result = scoreContext(FULL_FILE, effectivePolicy('FR'));
    // Attributions aᵢ(q) = aᵢ(p50) + z(q)·(wᵢσᵢ)²/sd, with (wσ)² = 306.25, 225, 56.25, 25, 25 and sd = 25.248762:
    //   p50: 105 ⇈, 60 ↑, −30 ↓, −20 ↓, 33.33 ↑            → keep 105, 60, 33.33, −30 (drop −20)
    //   p10: 89.46 ⇈, 48.58 ↑, −32.86 ↓, −21.27 ↓, 32.06 ↑  → |−32.86| > 32.06, so history_length ranks third
    //   p90: 120.54 ⇈, 71.42 ↑, −27.14 ↓, −18.73 ↓, 34.60 ↑
    // Levers (Δμ = w·Δx, p50 before 648.3):
    //   payment_history  0.96 → 0.98, x 0.8 → 0.9:  683.333 → 683.3, delta 35.0
    //   utilization      0.27 → 0.18, x 0.7 → 0.8:  678.333 → 678.3, delta 30.0
    //   recent_inquiries 1 → 0,       x 5/6 → 1:    665.0,             delta 16.7
    //   debt_to_income   0.42 → 0.36, x 0.3 → 0.4:  658.333 → 658.3, delta 10.0 (fourth: cut by the cap of three)
    expect(result).toEqual({
      scenarios: [
        {
          name: 'p10',
          score: 616.0,
          explain: [
            'factor:payment_history⇈',
            'factor:utilization↑',
            'factor:history_length↓',
            'factor:recent_inquiries↑',
          ],
        },
        {
          name: 'p50',
          score: 648.3,
          explain: [
            'factor:payment_history⇈',
            'factor:utilization↑',
            'factor:recent_inquiries↑',
            'factor:history_length↓',
          ],
        },
        {
          name: 'p90',
          score: 680.7,
          explain: [
            'factor:payment_history⇈',
            'factor:utilization↑',
            'factor:recent_inquiries↑',
            'factor:history_length↓',
          ],
        },
      ],
      levers: [
        { name: 'payment_history', direction: '+', delta: 35.0, step: 0.02 },
        { name: 'utilization', direction: '-', delta: 30.0, step: 0.09 },
        { name: 'recent_inquiries', direction: '-', delta: 16.7, step: 1 },
      ],
    });
  });

  it('when only the jurisdiction is given, then the band is wide, explain ranks by weight and there are no levers', () => {
    // Every x = 0.5, σ = 0.25: μ = 500, sd = 0.25·√255000 = 126.243812, z·sd = 161.787955
    // p10 = 338.212045 → 338.2, p90 = 661.787955 → 661.8.
    // p10 attributions z·(w·0.25)²/sd: −77.72 ⇊, −57.10 ↓, −14.28 ≈, and a tie at −6.34 between
    // debt_to_income and recent_inquiries, broken by name: debt_to_income stays.
    // p50 attributions are all 0, so the four kept are simply the first four names.
    const result = scoreContext({ jurisdiction: 'FR' }, effectivePolicy('FR'));
    expect(result.scenarios).toEqual([
      {
        name: 'p10',
        score: 338.2,
        explain: [
          'factor:payment_history⇊',
          'factor:utilization↓',
          'factor:history_length≈',
          'factor:debt_to_income≈',
        ],
      },
      {
        name: 'p50',
        score: 500,
        explain: [
          'factor:debt_to_income≈',
          'factor:history_length≈',
          'factor:payment_history≈',
          'factor:recent_inquiries≈',
        ],
      },
      {
        name: 'p90',
        score: 661.8,
        explain: [
          'factor:payment_history⇈',
          'factor:utilization↑',
          'factor:history_length≈',
          'factor:debt_to_income≈',
        ],
      },
    ]);
    expect(result.levers).toEqual([]);
  });

  it('when the jurisdiction disables recent_inquiries, then its weight is shared out and it takes no part', () => {
    // DE: weights × 1000/900 → 388.889, 333.333, 166.667, 111.111, 0. Same inputs as FULL_FILE:
    //   μ = (280 + 210 + 45 + 30)·10/9 = 627.777…;  sd = 0.05·(10/9)·√245000 = 27.498597;  z·sd = 35.240870
    //   p10 = 592.536908 → 592.5;  p50 = 627.8;  p90 = 663.018648 → 663.0
    //   p50 attributions: 116.67 ⇈, 66.67 ↑, −33.33 ↓, −22.22 ↓ (only four factors are active)
    //   p10: 99.05 ⇈, 53.72 ↑, −36.57 ↓, −23.66 ↓;  p90: 134.29 ⇈, 79.61 ⇈, −30.10 ↓, −20.78 ↓
    //   levers: payment 666.667 → 666.7 (+38.9), utilization 661.111 → 661.1 (+33.3), dti 638.889 → 638.9 (+11.1);
    //   inquiries_12m = 1 is present and improvable, but the factor is disabled, so it is no lever.
    const result = scoreContext({ ...FULL_FILE, jurisdiction: 'DE' }, effectivePolicy('DE'));
    const explain = ['payment_history⇈', 'utilization↑', 'history_length↓', 'debt_to_income↓'].map(
      (e) => `factor:${e}`,
    );
    expect(result).toEqual({
      scenarios: [
        { name: 'p10', score: 592.5, explain },
        { name: 'p50', score: 627.8, explain },
        { name: 'p90', score: 663.0, explain: explain.map((e) => e.replace('utilization↑', 'utilization⇈')) },
      ],
      levers: [
        { name: 'payment_history', direction: '+', delta: 38.9, step: 0.02 },
        { name: 'utilization', direction: '-', delta: 33.3, step: 0.09 },
        { name: 'debt_to_income', direction: '-', delta: 11.1, step: 0.06 },
      ],
    });
  });

  it('when the same context is scored twice, or with its keys in another order, then the result is identical', () => {
    const reordered: ScoreContext = {
      inquiries_12m: 1,
      debt_to_income: 0.42,
      history_months: 36,
      utilization: 0.27,
      on_time_ratio: 0.96,
      jurisdiction: 'FR',
    };
    const first = scoreContext(FULL_FILE, effectivePolicy('FR'));
    expect(scoreContext(FULL_FILE, effectivePolicy('FR'))).toEqual(first);
    expect(canonicalBytes(scoreContext(reordered, effectivePolicy('FR')))).toEqual(canonicalBytes(first));
  });

  it('when the context is invalid, then scoring throws an InvalidContextError listing the issues', () => {
    const bad = { jurisdiction: 'FR', utilisation: 0.3 } as unknown as ScoreContext;
    expect(() => scoreContext(bad, effectivePolicy('FR'))).toThrow(InvalidContextError);
    expect(() => scoreContext(bad, effectivePolicy('FR'))).toThrow(
      /\/utilisation is not a known context key/,
    );
  });
});
