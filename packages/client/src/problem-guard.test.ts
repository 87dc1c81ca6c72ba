import { describe, expect, expectTypeOf, it } from 'vitest';
import { isProblem, type ProblemCode } from './problem-guard.js';

describe('isProblem', () => {
  const problem = {
    type: '/docs#section/errors/not_found',
    title: 'Not found',
    status: 404,
    detail: 'No log record has this CID.',
    code: 'not_found',
  };

  it('recognises a problem, and narrows to it', () => {
    const value: unknown = problem;
    expect(isProblem(value)).toBe(true);
    if (isProblem(value)) expectTypeOf(value.code).toEqualTypeOf<ProblemCode>();
  });

  it('keeps a problem with a code this version does not know', () => {
    expect(isProblem({ ...problem, code: 'a_future_code' })).toBe(true);
  });

  it.each([
    ['undefined', undefined],
    ['a proxy error page', '<html>Bad gateway</html>'],
    ['a score response', { id: 'req_1', status: 'ok' }],
    ['a problem without code', { ...problem, code: undefined }],
    ['a problem with a string status', { ...problem, status: '404' }],
  ])('refuses %s', (_, value) => {
    expect(isProblem(value)).toBe(false);
  });
});
