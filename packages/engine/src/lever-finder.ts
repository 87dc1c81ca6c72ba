import { FACTORS } from './factor-table.js';
import { type ScoreBreakdown, scoreBreakdown } from './score-breakdown.js';
import type { Lever, Policy, ScoreContext } from './score-types.js';

/** How many levers a result lists at most. */
export const MAX_LEVERS = 3;

/**
 * The levers of a scored context: each actionable, present, improvable factor moved by one step (clamped to
 * its valid range) and rescored under the same policy; only gains at p50 are kept, best first.
 */
export function findLevers(
  context: ScoreContext,
  policy: Pick<Policy, 'weights'>,
  before: ScoreBreakdown,
): Lever[] {
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
    // Rounding to one decimal removes float noise from subtracting two one-decimal scores.
    const delta = Math.round((after.score.p50 - before.score.p50) * 10) / 10;
    if (delta <= 0) continue;
    // Six decimals remove binary noise such as 0.010000000000000009 from the assumed step.
    const step = Math.round(Math.abs(moved - value) * 1e6) / 1e6;
    // A value within 5e-7 of its bound moves by a step that rounds to 0: no lever (the contract says step > 0).
    if (step <= 0) continue;
    levers.push({ name: f.name, direction: spec.direction, delta, step });
  }
  return levers
    .sort((a, b) => b.delta - a.delta || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .slice(0, MAX_LEVERS);
}
