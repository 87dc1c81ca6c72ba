import { expect, it } from 'vitest';
import { fairShare } from './fair-share.js';

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
