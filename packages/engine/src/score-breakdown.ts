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
  const active = FACTORS.filter((f) => policy.weights[f.name] > 0).map((f) => {
    const value = context[f.key];
    const present = value !== undefined;
    return {
      name: f.name,
      key: f.key,
      weight: policy.weights[f.name],
      present,
      x: present ? f.goodness(value) : MISSING_GOODNESS,
      sigma: present ? PRESENT_SIGMA : MISSING_SIGMA,
    };
  });
  if (active.length === 0) throw new Error('policy has no factor with a positive weight');

  let mu = 0;
  let variance = 0;
  for (const f of active) {
    mu += f.weight * f.x;
    variance += (f.weight * f.sigma) ** 2;
  }
  const sd = Math.sqrt(variance);

  const raw = perScenario((q) => mu + SCENARIO_Z[q] * sd);
  const factors = active.map((f) => ({
    ...f,
    // The conditional mean of xᵢ given the total lands on raw(q); its attributions therefore sum to raw(q) − 500.
    attribution: perScenario((q) => f.weight * (f.x + (SCENARIO_Z[q] * f.weight * f.sigma ** 2) / sd - 0.5)),
  }));
  return { mu, sd, raw, score: perScenario((q) => toScore(raw[q])), factors };
}

function perScenario(fn: (q: ScenarioName) => number): Record<ScenarioName, number> {
  return { p10: fn('p10'), p50: fn('p50'), p90: fn('p90') };
}
