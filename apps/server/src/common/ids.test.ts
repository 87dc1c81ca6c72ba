import { describe, expect, it } from 'vitest';
import { newId } from './ids.js';

describe('newId', () => {
  it('makes prefixed ULIDs', () => {
    expect(newId('run')).toMatch(/^run_[0-9A-HJKMNP-TV-Z]{26}$/);
  });

  it('sorts ids in the order they were made, also within one millisecond', () => {
    // 2,000 ids take well under the time a millisecond tick allows many of them to share one time part.
    const ids = Array.from({ length: 2000 }, () => newId('key'));
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    const timeParts = ids.map((id) => id.slice(4, 14));
    expect(new Set(timeParts).size).toBeLessThan(ids.length);
  });
});
