import { describe, expect, it } from 'vitest';
import { BoundedCache } from './bounded-cache.js';

describe('BoundedCache', () => {
  it('evicts the least recently used entry when full', () => {
    const cache = new BoundedCache<string, number>({ maxEntries: 2, ttlMs: 1000 });
    cache.set('a', 1);
    cache.set('b', 2);
    cache.get('a'); // now b is the least recently used
    cache.set('c', 3);
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual([1, undefined, 3]);
    expect(cache.size).toBe(2);
  });

  it('forgets an entry once its time to live has passed', () => {
    let now = 0;
    const cache = new BoundedCache<string, number>({ maxEntries: 10, ttlMs: 1000, now: () => now });
    cache.set('a', 1);
    now = 999;
    expect(cache.get('a')).toBe(1);
    now = 1000;
    expect(cache.get('a')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('deletes the entries whose value matches', () => {
    const cache = new BoundedCache<string, { keyId: string }>({ maxEntries: 10, ttlMs: 1000 });
    cache.set('h1', { keyId: 'key_1' });
    cache.set('h2', { keyId: 'key_2' });
    cache.deleteWhere((owner) => owner.keyId === 'key_1');
    expect([cache.get('h1'), cache.get('h2')]).toEqual([undefined, { keyId: 'key_2' }]);
  });
});
