import { describe, expect, it } from 'vitest';
import { GroupCommitter, GroupCommitterClosedError } from './group-committer.js';

/** A commit that records its batches, and can be held open or made to fail. */
function recordingCommit() {
  const batches: number[][] = [];
  let gate: Promise<void> = Promise.resolve();
  let failWith: Error | undefined;
  return {
    batches,
    hold(): () => void {
      let release = () => {};
      gate = new Promise((resolve) => {
        release = resolve;
      });
      return release;
    },
    failNext(error: Error) {
      failWith = error;
    },
    async commit(batch: readonly number[]) {
      await gate;
      if (failWith) {
        const error = failWith;
        failWith = undefined;
        throw error;
      }
      batches.push([...batch]);
    },
  };
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('GroupCommitter', () => {
  it('commits everything added in the same turn in one flush', async () => {
    const store = recordingCommit();
    const committer = new GroupCommitter(store.commit);
    await Promise.all(Array.from({ length: 100 }, (_, i) => committer.add(i)));
    expect(store.batches).toEqual([Array.from({ length: 100 }, (_, i) => i)]);
    expect(committer.stats).toMatchObject({ flushes: 1, committedItems: 100, largestBatch: 100 });
  });

  it('acknowledges an item only after its commit has finished', async () => {
    const store = recordingCommit();
    const release = store.hold();
    const committer = new GroupCommitter(store.commit);
    let acknowledged = false;
    const added = committer.add(1).then(() => {
      acknowledged = true;
    });
    await nextTurn();
    await nextTurn();
    expect(acknowledged).toBe(false);
    release();
    await added;
    expect(acknowledged).toBe(true);
    expect(store.batches).toEqual([[1]]);
  });

  it('queues items that arrive during a flush for the next one', async () => {
    const store = recordingCommit();
    const release = store.hold();
    const committer = new GroupCommitter(store.commit);
    const first = committer.add(1);
    await nextTurn(); // the first flush is now in flight, held open
    const later = [committer.add(2), committer.add(3)];
    release();
    await Promise.all([first, ...later]);
    expect(store.batches).toEqual([[1], [2, 3]]);
  });

  it('with lingerMs, starts a flush no sooner than lingerMs after the previous one, with all that came meanwhile', async () => {
    const store = recordingCommit();
    const committer = new GroupCommitter(store.commit, 100, { lingerMs: 50 });
    const startedAt = performance.now();
    await committer.add(1); // the first flush starts at once
    const later = [committer.add(2)];
    await nextTurn();
    later.push(committer.add(3));
    await new Promise((resolve) => setTimeout(resolve, 10));
    later.push(committer.add(4));
    expect(store.batches).toEqual([[1]]);
    await Promise.all(later);
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(49);
    expect(store.batches).toEqual([[1], [2, 3, 4]]);
  });

  it('caps a batch at maxBatch items', async () => {
    const store = recordingCommit();
    const committer = new GroupCommitter(store.commit, 4);
    await Promise.all(Array.from({ length: 10 }, (_, i) => committer.add(i)));
    expect(store.batches.map((batch) => batch.length)).toEqual([4, 4, 2]);
    expect(store.batches.flat()).toEqual(Array.from({ length: 10 }, (_, i) => i));
  });

  it('rejects every item of a batch whose commit fails, and goes on with the next batch', async () => {
    const store = recordingCommit();
    const release = store.hold();
    const committer = new GroupCommitter(store.commit);
    const failure = new Error('disk full');
    store.failNext(failure);
    const doomed = [committer.add(1), committer.add(2), committer.add(3)];
    await nextTurn();
    const next = committer.add(4);
    release();
    const outcomes = await Promise.allSettled(doomed);
    expect(outcomes).toEqual(Array(3).fill({ status: 'rejected', reason: failure }));
    await expect(next).resolves.toBeUndefined();
    expect(store.batches).toEqual([[4]]);
    expect(committer.stats).toMatchObject({ flushes: 2, failedFlushes: 1, committedItems: 1 });
  });

  it('rejects every item when the commit throws synchronously', async () => {
    const committer = new GroupCommitter<number>(() => {
      throw new Error('bad statement');
    });
    const outcomes = await Promise.allSettled([committer.add(1), committer.add(2)]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected']);
  });

  it('on close, flushes what is queued and refuses new items', async () => {
    const store = recordingCommit();
    const committer = new GroupCommitter(store.commit, 2);
    const pending = [1, 2, 3].map((i) => committer.add(i));
    await committer.close();
    expect(store.batches.flat()).toEqual([1, 2, 3]);
    await Promise.all(pending);
    await expect(committer.add(4)).rejects.toBeInstanceOf(GroupCommitterClosedError);
  });

  it('drains at once when nothing is pending', async () => {
    const committer = new GroupCommitter(recordingCommit().commit);
    await expect(committer.drain()).resolves.toBeUndefined();
  });

  it('refuses a batch size below 1', () => {
    expect(() => new GroupCommitter(async () => {}, 0)).toThrow(RangeError);
  });
});
