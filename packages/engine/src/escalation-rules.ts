import type { EscalationReason, Policy, ScoreResult } from './score-types.js';

/**
 * Why a result must be reviewed under a policy, in a fixed order: `below_threshold` when p50 < review_threshold,
 * `high_uncertainty` when p90 − p10 > max_band. Empty when it needs no review.
 */
export function escalationReasons(
  result: ScoreResult,
  policy: Pick<Policy, 'review_threshold' | 'max_band'>,
): EscalationReason[] {
  const [p10, p50, p90] = result.scenarios;
  const reasons: EscalationReason[] = [];
  if (p50.score < policy.review_threshold) reasons.push('below_threshold');
  // The band is taken from the published one-decimal scores and rounded again, because 600.3 − 350.3 is
  // 249.99999999999994 in binary floating point and must compare as exactly 250.
  const band = Math.round((p90.score - p10.score) * 10) / 10;
  if (band > policy.max_band) reasons.push('high_uncertainty');
  return reasons;
}
