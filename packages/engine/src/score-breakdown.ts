import { type ContextKey, FACTORS, type FactorName } from './factor-table.js';
import type { Policy, ScenarioName, ScoreContext } from './score-types.js';

/** The normal quantile at 0.9; p10 uses its negative. Written out so every platform uses the same double. */
export const Z_P90 = 1.2815515655446004;

/** The z of each scenario. */
export const SCENARIO_Z: Readonly<Record<ScenarioName, number>> = Object.freeze({
  p10: -Z_P90,
  p50: 0,
  p90: Z_P90,
});

/** The scenarios in output order. */
export const SCENARIO_NAMES: readonly ScenarioName[] = Object.freeze(['p10', 'p50', 'p90']);

/** A missing input counts as average (x = 0.5) with a wide uncertainty, which is what widens the band. */
export const MISSING_GOODNESS = 0.5;
/** The uncertainty of a missing input's goodness. */
export const MISSING_SIGMA = 0.25;
/** The uncertainty of a present input's goodness. */
export const PRESENT_SIGMA = 0.05;

/** One active factor's numbers. */
export interface FactorBreakdown {
  name: FactorName;
  key: ContextKey;
  weight: number;
  present: boolean;
  /** Goodness in [0, 1] (0.5 when missing). */
  x: number;
  sigma: number;
  /** aᵢ(q) = wᵢ·(xᵢ(q) − 0.5), per scenario. */
  attribution: Record<ScenarioName, number>;
}

/** Every intermediate number of a scoring, so tests and clients can recompute the result. */
export interface ScoreBreakdown {
  mu: number;
  sd: number;
  /** μ + z(q)·sd, before clamping and rounding. */
  raw: Record<ScenarioName, number>;
  /** The published scores: raw clamped to [0, 1000], rounded to one decimal. */
  score: Record<ScenarioName, number>;
  /** The factors with weight > 0, in table order; a disabled factor takes no part. */
  factors: FactorBreakdown[];
}

/** score(q) = round(clamp(raw(q), 0, 1000) · 10) / 10. */
export function toScore(raw: number): number {
  return Math.round(Math.min(1000, Math.max(0, raw)) * 10) / 10;
}

/**
 * Computes μ, sd, raw(q), the scores and each factor's attributions for a context that is already valid.
 * Inputs of disabled factors are ignored.
 */
export function scoreBreakdown(context: ScoreContext, policy: Pick<Policy, 'weights'>): ScoreBreakdown {
  // Plain loops rather than filter/map/closures: this runs once per scoring and once per lever candidate.
  const factors: FactorBreakdown[] = [];
  let mu = 0;
  let variance = 0;
  for (const f of FACTORS) {
    const weight = policy.weights[f.name];
    if (!(weight > 0)) continue;
    const value = context[f.key];
    const present = value !== undefined;
    const x = present ? f.goodness(value) : MISSING_GOODNESS;
    const sigma = present ? PRESENT_SIGMA : MISSING_SIGMA;
    mu += weight * x;
    variance += (weight * sigma) ** 2;
    factors.push({ name: f.name, key: f.key, weight, present, x, sigma, attribution: NO_ATTRIBUTION });
  }
  if (factors.length === 0) throw new Error('policy has no factor with a positive weight');
  const sd = Math.sqrt(variance);

  const raw = { p10: mu + SCENARIO_Z.p10 * sd, p50: mu + SCENARIO_Z.p50 * sd, p90: mu + SCENARIO_Z.p90 * sd };
  for (const f of factors) {
    // The conditional mean of xᵢ given the total lands on raw(q); its attributions therefore sum to raw(q) − 500.
    const spread = f.weight * f.sigma ** 2;
    f.attribution = {
      p10: f.weight * (f.x + (SCENARIO_Z.p10 * spread) / sd - 0.5),
      p50: f.weight * (f.x + (SCENARIO_Z.p50 * spread) / sd - 0.5),
      p90: f.weight * (f.x + (SCENARIO_Z.p90 * spread) / sd - 0.5),
    };
  }
  return {
    mu,
    sd,
    raw,
    score: { p10: toScore(raw.p10), p50: toScore(raw.p50), p90: toScore(raw.p90) },
    factors,
  };
}

/** A placeholder until the attributions are known (sd needs every factor first); never returned. */
const NO_ATTRIBUTION: Record<ScenarioName, number> = Object.freeze({ p10: 0, p50: 0, p90: 0 });

/**
 * The p50 score after moving one factor's input to `moved`, everything else as in `before`: μ summed again
 * in the same order with that factor's goodness replaced, exactly as `scoreBreakdown` of the moved context
 * would (p50 = μ, as z(p50) = 0, and the factor's σ does not change: it is present before and after).
 */
export function p50AfterMove(before: ScoreBreakdown, index: number, goodness: number): number {
  let mu = 0;
  const { factors } = before;
  for (let i = 0; i < factors.length; i++) {
    const f = factors[i] as FactorBreakdown;
    mu += f.weight * (i === index ? goodness : f.x);
  }
  return toScore(mu + SCENARIO_Z.p50 * before.sd);
}
