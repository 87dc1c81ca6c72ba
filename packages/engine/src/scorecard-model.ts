import { assertValidContext } from './context-validator.js';
import { entryText, roundedAttribution, topAttributions } from './explain-marker.js';
import { findLevers } from './lever-finder.js';
import { DEFAULT_REASON_LANGUAGE, type ReasonLanguage } from './model-catalog.js';
import { type ModelVersion, SCORECARD_1, SCORECARD_2 } from './model-versions.js';
import { findReasons } from './reason-finder.js';
import { type FactorBreakdown, type ScoreBreakdown, scoreBreakdown } from './score-breakdown.js';
import type {
  Policy,
  Scenario,
  ScenarioName,
  ScoreContext,
  Scorecard2Result,
  ScoreResult,
} from './score-types.js';

/** Options of a scoring: the language of the reasons' statements (scorecard-2; `en` by default). */
export interface ScoreOptions {
  language?: ReasonLanguage;
}

/**
 * Scores a context under a policy with the scorecard-1 model: p10, p50, p90 with their explain entries, and up
 * to three levers. Throws `InvalidContextError` for a context the contract would reject. (What the
 * score-log/1 records and the score-log/2 records naming scorecard-1 were scored with; `scoreWith` names the version.)
 */
export function scoreContext(context: ScoreContext, policy: Pick<Policy, 'weights'>): ScoreResult {
  assertValidContext(context);
  const breakdown = scoreBreakdown(context, policy);
  return {
    scenarios: [scenario(breakdown, 'p10'), scenario(breakdown, 'p50'), scenario(breakdown, 'p90')],
    levers: findLevers(context, breakdown),
  };
}

/**
 * Scores a context under a policy with the scorecard-2 model: as scorecard-1, but Explain ranked and marked on
 * attributions rounded to 6 decimal places, and the Reasons (points below maximum at p50), their statements
 * in `options.language`. Throws `InvalidContextError` for a context the contract would reject.
 */
export function scoreScorecard2(
  context: ScoreContext,
  policy: Pick<Policy, 'weights'>,
  options: ScoreOptions = {},
): Scorecard2Result {
  assertValidContext(context);
  const breakdown = scoreBreakdown(context, policy);
  const levers = findLevers(context, breakdown);
  return {
    scenarios: [
      scenario(breakdown, 'p10', ROUNDED_ATTRIBUTION_OF),
      scenario(breakdown, 'p50', ROUNDED_ATTRIBUTION_OF),
      scenario(breakdown, 'p90', ROUNDED_ATTRIBUTION_OF),
    ],
    levers,
    reasons: findReasons(breakdown, levers, options.language ?? DEFAULT_REASON_LANGUAGE),
  };
}

/** Scores a context with a named model version, so a record can be recomputed with the version it names. */
export function scoreWith(
  version: typeof SCORECARD_2,
  context: ScoreContext,
  policy: Pick<Policy, 'weights'>,
  options?: ScoreOptions,
): Scorecard2Result;
export function scoreWith(
  version: typeof SCORECARD_1,
  context: ScoreContext,
  policy: Pick<Policy, 'weights'>,
): ScoreResult;
export function scoreWith(
  version: ModelVersion,
  context: ScoreContext,
  policy: Pick<Policy, 'weights'>,
  options?: ScoreOptions,
): ScoreResult | Scorecard2Result;
export function scoreWith(
  version: ModelVersion,
  context: ScoreContext,
  policy: Pick<Policy, 'weights'>,
  options: ScoreOptions = {},
): ScoreResult | Scorecard2Result {
  switch (version) {
    case SCORECARD_1:
      return scoreContext(context, policy);
    case SCORECARD_2:
      return scoreScorecard2(context, policy, options);
    default:
      throw new RangeError(`unknown model version "${String(version)}"`);
  }
}

/** One scenario's score and explain entries, ranked and marked on `attributionOf` (raw or rounded). */
function scenario(
  breakdown: ScoreBreakdown,
  q: ScenarioName,
  accessors: Readonly<Record<ScenarioName, (f: FactorBreakdown) => number>> = ATTRIBUTION_OF,
): Scenario {
  // One accessor per scenario, made once, rather than a closure and a `map` per scenario of every scoring.
  const attributionOf = accessors[q];
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

/** scorecard-2 ranks and marks on the attributions rounded to 6 decimal places. */
const ROUNDED_ATTRIBUTION_OF: Readonly<Record<ScenarioName, (f: FactorBreakdown) => number>> = {
  p10: (f) => roundedAttribution(f.attribution.p10),
  p50: (f) => roundedAttribution(f.attribution.p50),
  p90: (f) => roundedAttribution(f.attribution.p90),
};
