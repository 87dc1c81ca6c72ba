import { expect, it } from 'vitest';
import { GroupCommitter } from './group-committer.js';
import { commitIsolated } from './isolated-commit.js';

/** A commit that fails, as a whole, any batch holding a negative number; records what it committed. */
function fakeCommit() {
  const committed: number[] = [];
  let calls = 0;
  const commit = async (batch: readonly number[]) => {
    calls += 1;
    if (batch.some((n) => n < 0)) throw new Error(`bad item in ${batch.join(',')}`);
    committed.push(...batch);
  };
  return { commit, committed, calls: () => calls };
}

it('commits every good item and reports only the bad ones, in about 2·log2(n) extra commits', async () => {
  const { commit, committed, calls } = fakeCommit();
  const items = Array.from({ length: 64 }, (_, n) => (n === 37 ? -1 : n));
  const errors = await commitIsolated(commit, items);
  expect(errors.filter((e) => e !== undefined)).toHaveLength(1);
  expect(errors[37]).toBeInstanceOf(Error);
  expect(committed.sort((a, b) => a - b)).toEqual(items.filter((n) => n >= 0));
  expect(calls()).toBeLessThanOrEqual(1 + 2 * Math.log2(64));
});

it('a GroupCommitter with isolate rejects only the failing item of a batch', async () => {
  const { commit, committed } = fakeCommit();
  const committer = new GroupCommitter(commit, 100, { isolate: true });
  const results = await Promise.allSettled([1, 2, -3, 4].map((n) => committer.add(n)));
  expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
  expect(committed.sort()).toEqual([1, 2, 4]);
  expect(committer.stats.committedItems).toBe(3);

  const plain = new GroupCommitter(fakeCommit().commit, 100);
  const all = await Promise.allSettled([1, -2].map((n) => plain.add(n)));
  expect(all.map((r) => r.status)).toEqual(['rejected', 'rejected']);
});
