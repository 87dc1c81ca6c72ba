import { assertValidContext } from './context-validator.js';
import { explainEntries } from './explain-marker.js';
import { findLevers } from './lever-finder.js';
import { SCENARIO_NAMES, scoreBreakdown } from './score-breakdown.js';
import type { Policy, Scenario, ScoreContext, ScoreResult } from './score-types.js';

/**
 * Scores a context under a policy with the scorecard-1 model: p10, p50, p90 with their explain entries, and up
 * to three levers. Throws `InvalidContextError` for a context the contract would reject.
 */
export function scoreContext(context: ScoreContext, policy: Pick<Policy, 'weights'>): ScoreResult {
  assertValidContext(context);
  const breakdown = scoreBreakdown(context, policy);
  const scenarios = SCENARIO_NAMES.map(
    (q): Scenario => ({
      name: q,
      score: breakdown.score[q],
      explain: explainEntries(breakdown.factors.map((f) => ({ name: f.name, value: f.attribution[q] }))),
    }),
  ) as [Scenario, Scenario, Scenario];
  return { scenarios, levers: findLevers(context, policy, breakdown) };
}
