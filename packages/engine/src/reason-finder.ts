import type { FactorName } from './factor-table.js';
import {
  DEFAULT_REASON_LANGUAGE,
  type ReasonLanguage,
  reasonCodeOf,
  reasonStatement,
} from './model-catalog.js';
import { SCORECARD_2 } from './model-versions.js';
import type { FactorBreakdown, ScoreBreakdown } from './score-breakdown.js';
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
    points.push({ name: f.name, present: f.present, points: pointsBelow(f) });
  return points;
}

/** dᵢ = wᵢ·(1 − xᵢ) of one factor: its points below its maximum at p50 (findReasons ranks these). */
function pointsBelow(f: FactorBreakdown): number {
  return f.weight * (1 - f.x);
}

/** dᵢ rounded to 6 decimal places, as an integer of millionths: what ranks, so float noise decides nothing. */
const micro = (d: number): number => Math.round(d * 1e6);

/** A factor that is a reason, before it is ranked: dᵢ unrounded and in millionths. */
interface Candidate {
  name: FactorName;
  present: boolean;
  points: number;
  micro: number;
}

/**
 * The scorecard-2 reasons of a scoring: the factors with dᵢ > 0 (after rounding to 6 decimals, so a factor
 * at its maximum but for float noise, such as (1 − 0.8) / 0.2 = 0.9999999999999998, is none), ranked by dᵢ
 * rounded to 6 decimals descending, then name ascending; the first four, and `recent_inquiries` fifth when
 * it has dᵢ > 0 and is not among them. Each names the result's lever for its factor when there is one.
 * (One pass over the at most five factors with an insertion sort, as the explain ranking does: this runs
 * on every scoring.)
 */
export function findReasons(
  breakdown: ScoreBreakdown,
  levers: readonly Lever[],
  language: ReasonLanguage = DEFAULT_REASON_LANGUAGE,
): Reason[] {
  const ranked: Candidate[] = [];
  for (const f of breakdown.factors) {
    const points = pointsBelow(f);
    const candidate: Candidate = { name: f.name, present: f.present, points, micro: micro(points) };
    if (!(candidate.micro > 0)) continue;
    let j = ranked.length;
    ranked.push(candidate);
    while (j > 0) {
      const previous = ranked[j - 1] as Candidate;
      if (
        !(
          candidate.micro > previous.micro ||
          (candidate.micro === previous.micro && candidate.name < previous.name)
        )
      )
        break;
      ranked[j] = previous;
      j--;
    }
    ranked[j] = candidate;
  }
  let count = Math.min(ranked.length, MAX_REASONS);
  for (let i = MAX_REASONS; i < ranked.length; i++) {
    if ((ranked[i] as Candidate).name === INQUIRIES) {
      ranked[count] = ranked[i] as Candidate;
      count++;
      break;
    }
  }
  const reasons = new Array<Reason>(count);
  for (let i = 0; i < count; i++) {
    const p = ranked[i] as Candidate;
    const code = reasonCodeOf(p.name, p.present);
    const reason: Reason = {
      code,
      factor: p.name,
      rank: i + 1,
      points_below_max: Math.round(p.points * 10) / 10,
      statement: reasonStatement(SCORECARD_2, code, language),
    };
    // Only set when there is one: a key holding `undefined` is no JSON and would leave the log's fast path.
    if (hasLever(levers, p.name)) reason.lever = p.name;
    reasons[i] = reason;
  }
  return reasons;
}

function hasLever(levers: readonly Lever[], name: FactorName): boolean {
  for (let i = 0; i < levers.length; i++) if ((levers[i] as Lever).name === name) return true;
  return false;
}

/** The same reasons with their statements in another language (the codes, ranks and numbers do not change). */
export function restateReasons(reasons: readonly Reason[], language: ReasonLanguage): Reason[] {
  return reasons.map((r) => ({ ...r, statement: reasonStatement(SCORECARD_2, r.code, language) }));
}
