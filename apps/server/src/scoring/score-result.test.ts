import { effectivePolicy, scoreScorecard2 as scoreContext } from '@scenario-scoring/engine';
import { describe, expect, it } from 'vitest';
import { contractScoreResult, isContractResult } from './score-result.js';

const CONTEXT = {
  jurisdiction: 'DE',
  on_time_ratio: 0.9,
  utilization: 0.6,
  debt_to_income: 0.4,
  inquiries_12m: 4,
};

describe('contractScoreResult', () => {
  it('when the engine scores a subject, then the result is the same value in the contract types', () => {
    const result = scoreContext(CONTEXT, effectivePolicy('DE'));
    expect(result.levers.length).toBeGreaterThan(0);
    expect(contractScoreResult(result)).toEqual(result);
  });

  it('when the engine scores a subject, then its result is the contract’s as it is (answered without a copy)', () => {
    const result = scoreContext(CONTEXT, effectivePolicy('DE'));
    expect(isContractResult(result)).toBe(true);
    expect(contractScoreResult(result)).toEqual(result);
  });

  it('when a lever names a factor the contract has no lever for, then it is left out', () => {
    const result = scoreContext(CONTEXT, effectivePolicy('DE'));
    const foreign = { name: 'history_length' as const, direction: '+' as const, delta: 1, step: 1 };
    const withForeign = { ...result, levers: [foreign, ...result.levers] };
    expect(isContractResult(withForeign)).toBe(false);
    const converted = contractScoreResult(withForeign);
    expect(converted.levers).toEqual(result.levers);
  });

  it('when a reason names a lever the contract does not have, then the reason is kept without it', () => {
    const result = scoreContext(CONTEXT, effectivePolicy('DE'));
    const [first, ...rest] = result.reasons;
    const odd = {
      ...result,
      reasons: [{ ...first, lever: 'history_length' as const }, ...rest],
    } as typeof result;
    expect(isContractResult(odd)).toBe(false);
    expect(contractScoreResult(odd).reasons?.[0]).not.toHaveProperty('lever');
  });

  it('when the engine scores a subject, then its reasons come through, each naming its lever when it has one', () => {
    const result = scoreContext(CONTEXT, effectivePolicy('DE'));
    expect(result.reasons.some((r) => r.lever !== undefined)).toBe(true);
    expect(contractScoreResult(result).reasons).toEqual(result.reasons);
  });
});
