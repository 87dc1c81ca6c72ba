import { describe, expect, it } from 'vitest';
import { parsePreferences, preferredWaitMs } from './prefer-header.js';

describe('Prefer (RFC 7240)', () => {
  it('reads each preference and its value, case-insensitive names, quotes and parameters dropped', () => {
    const preferences = parsePreferences('Log-Inclusion; x=1, wait="5", respond-async');
    expect([...preferences]).toEqual([
      ['log-inclusion', ''],
      ['wait', '5'],
      ['respond-async', ''],
    ]);
    expect(preferredWaitMs(preferences)).toBe(5000);
  });

  it('keeps the first of a repeated preference and ignores a wait that is not whole seconds', () => {
    expect(preferredWaitMs(parsePreferences('wait=2, wait=9'))).toBe(2000);
    expect(preferredWaitMs(parsePreferences('wait=-1'))).toBeUndefined();
    expect(preferredWaitMs(parsePreferences('wait=1.5'))).toBeUndefined();
    expect(parsePreferences(undefined).size).toBe(0);
  });
});
