import { describe, expect, it } from 'vitest';
import { reasonLanguage } from './accept-language.js';

describe('reasonLanguage', () => {
  it.each([
    [undefined, 'en'],
    ['', 'en'],
    ['de', 'de'],
    ['de-DE', 'de'],
    ['DE-at', 'de'],
    ['en-GB, de;q=0.9', 'en'],
    ['fr, de;q=0.5, en;q=0.4', 'de'],
    ['de;q=0.2, en;q=0.8', 'en'],
    ['fr', 'en'],
    ['fr, *;q=0.1', 'en'],
    ['de;q=0', 'en'],
    ['zh-Hant-TW;q=1, de;q=0.001', 'de'],
    [';;;,,,q=', 'en'],
    ['x'.repeat(5000), 'en'],
  ] as const)('when Accept-Language is %j, then the statements are in %s', (header, language) => {
    expect(reasonLanguage(header)).toBe(language);
  });
});
