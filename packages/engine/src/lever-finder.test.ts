import { describe, expect, it } from 'vitest';
import { effectivePolicy } from './policy-loader.js';
import type { Policy } from './score-types.js';
import { scoreContext } from './scorecard-model.js';

const DEFAULT = effectivePolicy('FR');

describe('levers', () => {
  it('when a step would leave the valid range, then it is clamped and the step reports the change assumed', () => {
    // on_time_ratio 0.99 + 0.02 → clamped to 1: step 0.01 (not 0.010000000000000009).
    // x 0.95 → 1, so Δμ = 350·0.05 = 17.5: p50 657.5 → 675.0, delta 17.5.
    expect(scoreContext({ jurisdiction: 'FR', on_time_ratio: 0.99 }, DEFAULT).levers).toEqual([
      { name: 'payment_history', direction: '+', delta: 17.5, step: 0.01 },
    ]);
    // utilization 0.05 − 0.09 → clamped to 0: step 0.05. x 0.9444… → 1, Δμ = 300·0.05/0.9 = 16.667:
    // μ = 300·(17/18) + 700·0.5 = 633.333 → 633.3; after 650.0; delta 16.7.
    expect(scoreContext({ jurisdiction: 'FR', utilization: 0.05 }, DEFAULT).levers).toEqual([
      { name: 'utilization', direction: '-', delta: 16.7, step: 0.05 },
    ]);
  });

  it('when a value is within 5e-7 of its bound, then it offers no lever of step 0 (found by contract fuzzing)', () => {
    const context = { jurisdiction: 'FR', on_time_ratio: 0.9999995, history_months: 3 };
    for (const lever of scoreContext(context, DEFAULT).levers) expect(lever.step).toBeGreaterThan(0);
    expect(scoreContext(context, DEFAULT).levers.map((l) => l.name)).not.toContain('payment_history');
  });

  it('when an input already has x = 1, then it offers no lever', () => {
    const context = {
      jurisdiction: 'FR',
      on_time_ratio: 1,
      utilization: 0,
      debt_to_income: 0,
      inquiries_12m: 0,
    };
    expect(scoreContext(context, DEFAULT).levers).toEqual([]);
  });

  it('when a step does not raise p50, then the lever is dropped', () => {
    // on_time_ratio 0.5 → 0.52 keeps x clamped at 0; debt_to_income 2 → 1.94 keeps x at 0: delta 0 for both.
    // history_months is not actionable, and a missing input is never a lever.
    const context = { jurisdiction: 'FR', on_time_ratio: 0.5, debt_to_income: 2, history_months: 12 };
    expect(scoreContext(context, DEFAULT).levers).toEqual([]);
  });

  it('when deltas tie, then levers are ordered by name, and only three are kept', () => {
    // A policy where two pairs of levers gain the same: every x starts at 0.5 and μ = 500.
    //   payment_history  0.9 → 0.92,  x 0.5 → 0.6:   300·0.1 = 30
    //   utilization      0.45 → 0.36, x 0.5 → 0.6:   300·0.1 = 30
    //   debt_to_income   0.3 → 0.24,  x 0.5 → 0.6:   250·0.1 = 25
    //   recent_inquiries 3 → 2,       x 0.5 → 0.667: 150·(1/6) = 25  (fourth by name: cut)
    const policy: Policy = {
      ...DEFAULT,
      weights: {
        payment_history: 300,
        utilization: 300,
        history_length: 0,
        debt_to_income: 250,
        recent_inquiries: 150,
      },
    };
    const context = {
      jurisdiction: 'FR',
      on_time_ratio: 0.9,
      utilization: 0.45,
      debt_to_income: 0.3,
      inquiries_12m: 3,
    };
    expect(scoreContext(context, policy).levers).toEqual([
      { name: 'payment_history', direction: '+', delta: 30, step: 0.02 },
      { name: 'utilization', direction: '-', delta: 30, step: 0.09 },
      { name: 'debt_to_income', direction: '-', delta: 25, step: 0.06 },
    ]);
  });

  it('when levers differ in gain, then the largest comes first regardless of name', () => {
    // μ = 100·0.3 + 100·(5/6) + 800·0.5 = 513.333 → 513.3 (default weights).
    // debt_to_income 0.42 → 0.36: x 0.3 → 0.4, 523.333 → 523.3, +10.0; inquiries 1 → 0: x 5/6 → 1, 530.0, +16.7.
    const context = { jurisdiction: 'FR', debt_to_income: 0.42, inquiries_12m: 1 };
    expect(scoreContext(context, DEFAULT).levers.map((l) => [l.name, l.delta])).toEqual([
      ['recent_inquiries', 16.7],
      ['debt_to_income', 10],
    ]);
  });
});
