import { describe, expect, it } from 'vitest';
import { assertValidContext, contextIssues, InvalidContextError } from './context-validator.js';

describe('contextIssues', () => {
  it('when the context is valid, including values at the ends of each range, then there are no issues', () => {
    expect(contextIssues({ jurisdiction: 'US-CA' })).toEqual([]);
    expect(
      contextIssues({
        jurisdiction: 'DE',
        on_time_ratio: 1,
        utilization: 10,
        history_months: 1200,
        debt_to_income: 0,
        inquiries_12m: 100,
      }),
    ).toEqual([]);
  });

  it('when several things are wrong, then every issue is listed, not only the first', () => {
    expect(
      contextIssues({
        jurisdiction: 'de',
        on_time_ratio: 1.2,
        history_months: 3.5,
        inquiries_12m: Number.NaN,
        debt_to_income: '0.3',
        utilisation: 0.3,
      }),
    ).toEqual([
      { path: '/jurisdiction', message: 'must match ^[A-Z]{2}(-[A-Z0-9]{1,3})?$' },
      { path: '/on_time_ratio', message: 'must be between 0 and 1' },
      { path: '/history_months', message: 'must be an integer' },
      { path: '/debt_to_income', message: 'must be a finite number' },
      { path: '/inquiries_12m', message: 'must be a finite number' },
      { path: '/utilisation', message: 'is not a known context key' },
    ]);
  });

  it('when the jurisdiction is missing or the context is not an object, then that is the issue', () => {
    expect(contextIssues({})).toEqual([{ path: '/jurisdiction', message: 'is required' }]);
    expect(contextIssues([])).toEqual([{ path: '', message: 'must be an object' }]);
    expect(contextIssues({ jurisdiction: 'FR', utilization: -0.1 })).toEqual([
      { path: '/utilization', message: 'must be between 0 and 10' },
    ]);
  });

  it('when asserting an invalid context, then InvalidContextError carries the issues', () => {
    try {
      assertValidContext({ jurisdiction: 'FR', inquiries_12m: 101 });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidContextError);
      expect((error as InvalidContextError).issues).toEqual([
        { path: '/inquiries_12m', message: 'must be between 0 and 100' },
      ]);
    }
  });
});
