import type { FactorName } from './factor-table.js';
import {
  DEFAULT_REASON_LANGUAGE,
  type ReasonLanguage,
  reasonCodeOf,
  reasonStatement,
} from './model-catalog.js';
import { SCORECARD_2 } from './model-versions.js';
import type { ScoreBreakdown } from './score-breakdown.js';
import type { Lever, Reason } from './score-types.js';

/** How many reasons are ranked before `recent_inquiries` may be added as a fifth. */
export const MAX_REASONS = 4;

/** The factor added as a fifth reason when it counts and is not among the four (FCRA 609(f)). */
const INQUIRIES: FactorName = 'recent_inquiries';

/** A factor's points below its maximum at p50. */
export interface PointsBelowMax {
  name: FactorName;
  present: boolean;
  /** dᵢ = wᵢ·(1 − xᵢ), unrounded. */
  points: number;
}

/**
 * dᵢ = wᵢ·(1 − xᵢ) of every factor with weight > 0, in table order (a disabled factor has none). p50's
 * conditional goodness is xᵢ itself (z(p50) = 0), so these sum to 1000 − μ.
 */
export function pointsBelowMax(breakdown: ScoreBreakdown): PointsBelowMax[] {
  const points: PointsBelowMax[] = [];
  for (const f of breakdown.factors)
    points.push({ name: f.name, present: f.present, points: f.weight * (1 - f.x) });
  return points;
}

/** dᵢ rounded to 6 decimal places, as an integer of millionths: what ranks, so float noise decides nothing. */
const micro = (d: number): number => Math.round(d * 1e6);

/**
 * The scorecard-2 reasons of a scoring: the factors with dᵢ > 0 (after rounding to 6 decimals, so a factor
 * at its maximum but for float noise, such as (1 − 0.8) / 0.2 = 0.9999999999999998, is none), ranked by dᵢ
 * rounded to 6 decimals descending, then name ascending; the first four, and `recent_inquiries` fifth when
 * it has dᵢ > 0 and is not among them. Each names the result's lever for its factor when there is one.
 */
export function findReasons(
  breakdown: ScoreBreakdown,
  levers: readonly Lever[],
  language: ReasonLanguage = DEFAULT_REASON_LANGUAGE,
): Reason[] {
  const ranked = pointsBelowMax(breakdown).filter((p) => micro(p.points) > 0);
  ranked.sort(
    (a, b) => micro(b.points) - micro(a.points) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
  );
  const chosen = ranked.slice(0, MAX_REASONS);
  const inquiries = ranked.slice(MAX_REASONS).find((p) => p.name === INQUIRIES);
  if (inquiries !== undefined) chosen.push(inquiries);
  return chosen.map((p, i) => {
    const code = reasonCodeOf(p.name, p.present);
    const reason: Reason = {
      code,
      factor: p.name,
      rank: i + 1,
      points_below_max: Math.round(p.points * 10) / 10,
      statement: reasonStatement(SCORECARD_2, code, language),
    };
    // Only set when there is one: a key holding `undefined` is no JSON and would leave the log's fast path.
    if (levers.some((l) => l.name === p.name)) reason.lever = p.name;
    return reason;
  });
}

/** The same reasons with their statements in another language (the codes, ranks and numbers do not change). */
export function restateReasons(reasons: readonly Reason[], language: ReasonLanguage): Reason[] {
  return reasons.map((r) => ({ ...r, statement: reasonStatement(SCORECARD_2, r.code, language) }));
}
