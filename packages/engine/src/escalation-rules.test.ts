import { describe, expect, it } from 'vitest';
import { escalationReasons } from './escalation-rules.js';
import { effectivePolicy } from './policy-loader.js';
import type { ScoreResult } from './score-types.js';
import { scoreContext } from './scorecard-model.js';

const LIMITS = { review_threshold: 550, max_band: 250 };
const resultWith = (p10: number, p50: number, p90: number): ScoreResult => ({
  scenarios: [
    { name: 'p10', score: p10, explain: [] },
    { name: 'p50', score: p50, explain: [] },
    { name: 'p90', score: p90, explain: [] },
  ],
  levers: [],
});

describe('escalationReasons', () => {
  it('when p50 is at the review threshold, then it is not escalated; just below, it is', () => {
    expect(escalationReasons(resultWith(540, 550, 560), LIMITS)).toEqual([]);
    expect(escalationReasons(resultWith(540, 549.9, 560), LIMITS)).toEqual(['below_threshold']);
    expect(escalationReasons(resultWith(540, 550.1, 560), LIMITS)).toEqual([]);
  });

  it('when the band is exactly max_band, then it is not escalated, even though 600.3 − 350.3 < 250 in floating point', () => {
    expect(escalationReasons(resultWith(350.3, 560, 600.3), LIMITS)).toEqual([]);
    expect(escalationReasons(resultWith(350.2, 560, 600.3), LIMITS)).toEqual(['high_uncertainty']);
    expect(escalationReasons(resultWith(350.4, 560, 600.3), LIMITS)).toEqual([]);
  });

  it('when both hold, then both reasons are listed, threshold first', () => {
    expect(escalationReasons(resultWith(100, 300, 500), LIMITS)).toEqual([
      'below_threshold',
      'high_uncertainty',
    ]);
  });

  it('when a thin file is scored, then it is escalated for both reasons; a good full file is not', () => {
    // Empty context: p50 500 < 550, band 661.8 − 338.2 = 323.6 > 250.
    const policy = effectivePolicy('FR');
    expect(escalationReasons(scoreContext({ jurisdiction: 'FR' }, policy), policy)).toEqual([
      'below_threshold',
      'high_uncertainty',
    ]);
    const full = {
      jurisdiction: 'FR',
      on_time_ratio: 0.96,
      utilization: 0.27,
      history_months: 36,
      debt_to_income: 0.42,
      inquiries_12m: 1,
    };
    // p50 648.3 ≥ 550; band 680.7 − 616.0 = 64.7.
    expect(escalationReasons(scoreContext(full, policy), policy)).toEqual([]);
  });

  it('when the jurisdiction has stricter limits, then the same result escalates there only', () => {
    const result = resultWith(400, 580, 610); // band 210
    expect(escalationReasons(result, effectivePolicy('FR'))).toEqual([]);
    expect(escalationReasons(result, effectivePolicy('US-CA'))).toEqual([
      'below_threshold',
      'high_uncertainty',
    ]);
  });
});
