import type { FactorName, LeverDirection } from './factor-table.js';

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
