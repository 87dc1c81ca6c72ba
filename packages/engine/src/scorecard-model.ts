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
  const top = topAttributions(breakdown.factors, (f: FactorBreakdown) => f.attribution[q]);
  return { name: q, score: breakdown.score[q], explain: top.map((f) => entryText(f.name, f.attribution[q])) };
}
