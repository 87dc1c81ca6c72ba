import { describe, expect, it } from 'vitest';
import { API_KEY_PATTERN, generateApiKey, hashApiKey } from './api-key.js';

describe('API keys', () => {
  it('are sk_ followed by 40 base62 characters', () => {
    for (let i = 0; i < 200; i++) expect(generateApiKey()).toMatch(API_KEY_PATTERN);
  });

  it('are all different', () => {
    const keys = new Set(Array.from({ length: 1000 }, generateApiKey));
    expect(keys.size).toBe(1000);
  });

  it('use the whole alphabet roughly evenly', () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 2000; i++) {
      for (const char of generateApiKey().slice(3)) counts.set(char, (counts.get(char) ?? 0) + 1);
    }
    // 80,000 characters over 62 symbols: about 1290 each; a bias (e.g. modulo 256) would skew the first ones.
    expect(counts.size).toBe(62);
    for (const count of counts.values()) expect(count).toBeGreaterThan(1100);
    for (const count of counts.values()) expect(count).toBeLessThan(1500);
  });

  it('hash to the SHA-256 hex of the key', () => {
    expect(hashApiKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});
