import { assertValidContext } from './context-validator.js';
import { entryText, topAttributions } from './explain-marker.js';
import { findLevers } from './lever-finder.js';
import { type FactorBreakdown, type ScoreBreakdown, scoreBreakdown } from './score-breakdown.js';
import type { Policy, Scenario, ScenarioName, ScoreContext, ScoreResult } from './score-types.js';

/**
 * Scores a context under a policy with the scorecard-1 model: p10, p50, p90 with their explain entries, and up
 * to three levers. Throws `InvalidContextError` for a context the contract would reject.
 */
export function scoreContext(context: ScoreContext, policy: Pick<Policy, 'weights'>): ScoreResult {
  assertValidContext(context);
  const breakdown = scoreBreakdown(context, policy);
  return {
    scenarios: [scenario(breakdown, 'p10'), scenario(breakdown, 'p50'), scenario(breakdown, 'p90')],
    levers: findLevers(context, breakdown),
  };
}

function scenario(breakdown: ScoreBreakdown, q: ScenarioName): Scenario {
  // One accessor per scenario, made once, rather than a closure and a `map` per scenario of every scoring.
  const attributionOf = ATTRIBUTION_OF[q];
  const top = topAttributions(breakdown.factors, attributionOf);
  const explain = new Array<string>(top.length);
  for (let i = 0; i < top.length; i++) {
    const f = top[i] as FactorBreakdown;
    explain[i] = entryText(f.name, attributionOf(f));
  }
  return { name: q, score: breakdown.score[q], explain };
}

const ATTRIBUTION_OF: Readonly<Record<ScenarioName, (f: FactorBreakdown) => number>> = {
  p10: (f) => f.attribution.p10,
  p50: (f) => f.attribution.p50,
  p90: (f) => f.attribution.p90,
};
