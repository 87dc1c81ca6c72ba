import { FACTORS, type FactorName, type FactorSpec } from './factor-table.js';
import { p50AfterMove, type ScoreBreakdown } from './score-breakdown.js';
import type { Lever, ScoreContext } from './score-types.js';

/** How many levers a result lists at most. */
export const MAX_LEVERS = 3;

/**
 * The levers of a scored context: each actionable, present, improvable factor moved by one step (clamped to
 * its valid range) and rescored at p50 under the policy `before` was scored with; only gains at p50 are kept,
 * best first.
 */
export function findLevers(context: ScoreContext, before: ScoreBreakdown): Lever[] {
  const levers: Lever[] = [];
  const { factors } = before;
  for (let i = 0; i < factors.length; i++) {
    const f = factors[i] as (typeof factors)[number];
    const spec = SPEC_BY_NAME[f.name];
    const value = context[f.key];
    if (!spec.actionable || spec.direction === null || spec.step === null) continue;
    if (value === undefined || f.x >= 1) continue;

    const [min, max] = spec.range;
    const moved = Math.min(
      max,
      Math.max(min, spec.direction === '+' ? value + spec.step : value - spec.step),
    );
    const after = p50AfterMove(before, i, spec.goodness(moved));
    // Rounding to one decimal removes float noise from subtracting two one-decimal scores.
    const delta = Math.round((after - before.score.p50) * 10) / 10;
    if (delta <= 0) continue;
    // Six decimals remove binary noise such as 0.010000000000000009 from the assumed step.
    const step = Math.round(Math.abs(moved - value) * 1e6) / 1e6;
    levers.push({ name: f.name, direction: spec.direction, delta, step });
  }
  if (levers.length > 1) levers.sort(byDeltaThenName);
  if (levers.length > MAX_LEVERS) levers.length = MAX_LEVERS;
  return levers;
}

function byDeltaThenName(a: Lever, b: Lever): number {
  return b.delta - a.delta || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

const SPEC_BY_NAME = Object.fromEntries(FACTORS.map((f) => [f.name, f])) as Record<FactorName, FactorSpec>;
