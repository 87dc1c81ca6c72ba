import type { ScoreResponse } from '@scenario-scoring/api-types';
import type { Reason, Scorecard2Result } from '@scenario-scoring/engine';

/** A scoring result as the contract (the generated API types) declares it. */
export type ContractScoreResult = ScoreResponse['result'];
type LeverName = ContractScoreResult['levers'][number]['name'];

/**
 * The contract's lever names (its enum). `satisfies` makes the compiler refuse a name the contract lacks
 * and a contract name missing here, so a change of either side fails the typecheck.
 */
const LEVER_NAMES = {
  payment_history: true,
  utilization: true,
  debt_to_income: true,
  recent_inquiries: true,
} as const satisfies Record<LeverName, true>;

function isLeverName(name: string): name is LeverName {
  return Object.hasOwn(LEVER_NAMES, name);
}

/**
 * The engine's result in the contract's types, checked by the compiler rather than cast: the scenarios are
 * assigned as they are (so the engine's types must fit the contract's), and a lever keeps its place only
 * under a contract lever name (the engine types a name as any factor; only actionable ones have levers).
 */
export function contractScoreResult(result: Scorecard2Result): ContractScoreResult {
  return {
    scenarios: result.scenarios,
    levers: result.levers.flatMap((lever) => {
      const { name } = lever;
      return isLeverName(name) ? [{ ...lever, name }] : [];
    }),
    reasons: contractReasons(result.reasons),
  };
}

/**
 * Whether the engine's result already is the contract's, member for member: every lever, and every reason's
 * lever, under a contract lever name (what the engine makes: only actionable factors have levers). Then it
 * is answered as it is, with no copy of its levers and reasons (a scoring's garbage is most of its GC).
 */
export function isContractResult(result: Scorecard2Result): result is Scorecard2Result & ContractScoreResult {
  const { levers, reasons } = result;
  for (let i = 0; i < levers.length; i++)
    if (!isLeverName((levers[i] as { name: string }).name)) return false;
  for (let i = 0; i < reasons.length; i++) {
    const { lever } = reasons[i] as { lever?: string };
    if (lever !== undefined && !isLeverName(lever)) return false;
  }
  return true;
}

/** The engine's reasons in the contract's types: a reason names a lever only under a contract lever name. */
export function contractReasons(reasons: readonly Reason[]): NonNullable<ContractScoreResult['reasons']> {
  return reasons.map(({ lever, ...reason }) =>
    lever !== undefined && isLeverName(lever) ? { ...reason, lever } : reason,
  );
}
