import type { FactorName, LeverDirection } from './factor-table.js';
import type { ReasonCode } from './model-catalog.js';

/** What is scored: the jurisdiction (selects the policy) and up to five optional inputs. */
export interface ScoreContext {
  jurisdiction: string;
  on_time_ratio?: number;
  utilization?: number;
  history_months?: number;
  debt_to_income?: number;
  inquiries_12m?: number;
}

/** The three scenarios, pessimistic to optimistic. */
export type ScenarioName = 'p10' | 'p50' | 'p90';

/** A scenario's score (one decimal place) and its explain entries (`factor:<name><marker>`). */
export interface Scenario {
  name: ScenarioName;
  score: number;
  explain: string[];
}

/** A change of one input that raises the p50 score by `delta`. */
export interface Lever {
  name: FactorName;
  direction: LeverDirection;
  delta: number;
  step: number;
}

/** The outcome of scoring one context: p10, p50, p90 (in that order) and up to three levers. */
export interface ScoreResult {
  scenarios: [Scenario, Scenario, Scenario];
  levers: Lever[];
}

/**
 * One of the principal reasons the score was not higher (scorecard-2): a factor's points below its maximum at
 * p50, dᵢ = wᵢ·(1 − xᵢ), ranked.
 */
export interface Reason {
  /** `PH1`…`RI1` when the factor's input was present (low), `PH0`…`RI0` when it was missing. */
  code: ReasonCode;
  factor: FactorName;
  /** 1 to 4, or 5 for `recent_inquiries` added beyond the four. */
  rank: number;
  /** dᵢ rounded to one decimal place, as scores are. */
  points_below_max: number;
  /** The catalog's statement of the code, in the language asked for. */
  statement: string;
  /** The name of the result's lever for this factor, present only when the result has one. */
  lever?: FactorName;
}

/** A scorecard-2 result: a scorecard-1 result with Reasons. */
export interface Scorecard2Result extends ScoreResult {
  reasons: Reason[];
}

/** The effective policy for a jurisdiction: weights summing to 1000 and the escalation limits. */
export interface Policy {
  /** The code asked for, e.g. `US-NY`. */
  jurisdiction: string;
  /** The policy file entry used, e.g. `US` or `default`. */
  policy_id: string;
  policy_version: string;
  weights: Record<FactorName, number>;
  review_threshold: number;
  max_band: number;
}

/** Why a scored subject is escalated for review. */
export type EscalationReason = 'below_threshold' | 'high_uncertainty';
