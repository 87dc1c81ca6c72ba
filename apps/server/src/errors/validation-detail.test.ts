import { describe, expect, it } from 'vitest';
import { validationDetail } from './validation-detail.js';

describe('validationDetail', () => {
  it('counts a field with two problems once, and lists both problems', () => {
    const detail = validationDetail([
      { path: '/body/subject', message: 'must NOT have fewer than 1 characters' },
      { path: '/body/subject', message: 'must match pattern "^\\\\S"' },
    ]);
    expect(detail).toBe(
      'The request has 1 invalid field: /body/subject must NOT have fewer than 1 characters; /body/subject must match pattern "^\\\\S".',
    );
  });

  it('says how many problems are not listed', () => {
    const errors = ['/a', '/a', '/b', '/c', '/d'].map((path) => ({ path, message: 'is wrong' }));
    expect(validationDetail(errors)).toBe(
      'The request has 4 invalid fields: /a is wrong; /a is wrong; /b is wrong; and 2 more.',
    );
  });

  it('takes the count of problems when errors holds only the first of them', () => {
    const errors = [{ path: '/body/x', message: 'must NOT have additional properties' }];
    expect(validationDetail(errors, 500)).toMatch(
      /^The request has 500 invalid fields: \/body\/x .*; and 499 more\.$/,
    );
  });
});
