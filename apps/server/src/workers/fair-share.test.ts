import { expect, it } from 'vitest';
import { fairShare, reservedSlots, tenantShare } from './fair-share.js';

it("takes a fan-out's new deliveries as a claim shares them: the fewest held first, none beyond a tenant's cap", () => {
  const tenants = ['a', 'a', 'a', 'a', 'b', 'b', 'c'];
  expect(fairShare(tenants, { max: 10, tenantCap: Number.POSITIVE_INFINITY })).toEqual([0, 4, 6, 1, 5, 2, 3]);
  expect(fairShare(tenants, { max: 4, tenantCap: 2 })).toEqual([0, 4, 6, 1]);
  expect(fairShare(tenants, { max: 10, tenantCap: 2, held: new Map([['a', 2]]) })).toEqual([4, 6, 5]);
  expect(fairShare(tenants, { max: 0, tenantCap: 2 })).toEqual([]);
});

it('orders rows already leased without leaving any out, however many the worker holds for their tenant', () => {
  const held = new Map([['a', 2]]);
  expect(fairShare(['a', 'b', 'a'], { max: 3, tenantCap: Number.POSITIVE_INFINITY, held })).toEqual([
    1, 0, 2,
  ]);
});

it("shrinks a tenant's share of the slots with the tenants that hold work, always leaving a share for one more", () => {
  const share = (activeTenants: number, slots = 64, maxPerTenant = 32) =>
    tenantShare({ slots, maxPerTenant, activeTenants });
  expect(share(0)).toBe(32);
  expect(share(1)).toBe(32);
  expect(share(2)).toBe(21);
  expect(share(3)).toBe(16);
  expect(share(7)).toBe(8);
  expect(share(63)).toBe(1);
  expect(share(1000)).toBe(1);
  expect(share(1, 64, 4)).toBe(4);
  expect(share(0, 2, 1)).toBe(1);
  // However many hold work, their shares together leave slots free for a tenant with none.
  for (let active = 1; active < 64; active++) expect(active * share(active)).toBeLessThan(64);
});

it('keeps an eighth of the slots, at least one, for tenants with no attempt in flight', () => {
  expect(reservedSlots(64)).toBe(8);
  expect(reservedSlots(16)).toBe(2);
  expect(reservedSlots(8)).toBe(1);
  expect(reservedSlots(2)).toBe(1);
});
