import { describe, expect, it } from 'vitest';
import { BackgroundPacer } from './background-pacer.js';

/** A pacer on a hand-moved clock, whose pauses are recorded and end when the test says. */
function pacerOnClock(share: number) {
  let now = 0;
  const pauses: number[] = [];
  const pending: (() => void)[] = [];
  const pacer = new BackgroundPacer({
    share,
    quietMs: 1000,
    now: () => now,
    sleep: (ms) => {
      pauses.push(ms);
      return new Promise((resolve) => pending.push(resolve));
    },
  });
  return {
    pacer,
    pauses,
    advance: (ms: number) => {
      now += ms;
    },
    endPauses: () => {
      for (const resolve of pending.splice(0)) resolve();
    },
  };
}

describe('the background pacer', () => {
  it('when no request a client waits on was seen, then background steps run at once, side by side, with no pause', async () => {
    const { pacer, pauses, advance } = pacerOnClock(0.5);
    let running = 0;
    let most = 0;
    const step = async () => {
      running += 1;
      most = Math.max(most, running);
      await Promise.resolve();
      advance(10);
      running -= 1;
    };
    await Promise.all([pacer.run(step), pacer.run(step), pacer.run(step)]);
    expect(most).toBe(3);
    expect(pauses).toEqual([]);
    expect(pacer.foregroundBusy).toBe(false);
  });

  it('when requests are being served, then steps run one at a time, each followed by a pause that keeps them to their share', async () => {
    const { pacer, pauses, advance, endPauses } = pacerOnClock(0.25);
    pacer.noteForeground();
    expect(pacer.foregroundBusy).toBe(true);
    const order: string[] = [];
    const step = (name: string) => async () => {
      order.push(`${name} starts`);
      await Promise.resolve();
      advance(20);
      order.push(`${name} ends`);
      return name;
    };
    const first = pacer.run(step('a'));
    const second = pacer.run(step('b'));
    expect(await first).toBe('a');
    // 20 ms of work at a share of 1/4: 60 ms without background work before the next step.
    expect(pauses).toEqual([60]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['a starts', 'a ends']);
    endPauses();
    expect(await second).toBe('b');
    expect(order).toEqual(['a starts', 'a ends', 'b starts', 'b ends']);
  });

  it('when the caller spent time preparing a step (parsing), then the pause charges it too', async () => {
    const { pacer, pauses, advance, endPauses } = pacerOnClock(0.5);
    pacer.noteForeground();
    await pacer.run(async () => advance(2), 30);
    // 2 ms of writing and 30 ms of parsing before it, at a share of one half: 32 ms of pause.
    expect(pauses).toEqual([32]);
    endPauses();
  });

  it('when work done outside a step is charged, then the caller waits for the steps before it and its own pause, and the next step waits for that pause too', async () => {
    const { pacer, pauses, advance, endPauses } = pacerOnClock(0.5);
    // While the foreground is quiet: at once, no pause.
    await pacer.charge(40);
    expect(pauses).toEqual([]);
    pacer.noteForeground();
    const order: string[] = [];
    const writing = pacer.run(async () => {
      order.push('write');
      advance(4);
    });
    const charged = pacer.charge(12).then(() => order.push('charged'));
    const next = pacer.run(async () => {
      order.push('next');
    });
    await writing;
    // 4 ms of the write, then the charge's turn: its 12 ms of reading earn 12 ms of pause, which the
    // caller sits out before reading on.
    expect(pauses).toEqual([4]);
    endPauses();
    await new Promise((resolve) => setImmediate(resolve));
    expect(pauses).toEqual([4, 12]);
    expect(order).toEqual(['write']);
    endPauses();
    await charged;
    await next;
    expect(order.slice(1).sort()).toEqual(['charged', 'next']);
    // Charging nothing waits only for what is before it.
    await pacer.charge(0);
    expect(pauses).toEqual([4, 12]);
  });

  it('when a step fails, then its error is the caller’s and the next step still runs', async () => {
    const { pacer, advance, endPauses } = pacerOnClock(0.5);
    pacer.noteForeground();
    const failing = pacer.run(async () => {
      advance(5);
      throw new Error('the disk is gone');
    });
    const next = pacer.run(async () => 'ran');
    await expect(failing).rejects.toThrow('the disk is gone');
    endPauses();
    expect(await next).toBe('ran');
  });

  it('when the last request was seen longer ago than the quiet time, then steps run at full speed again', async () => {
    const { pacer, pauses, advance } = pacerOnClock(0.5);
    pacer.noteForeground();
    advance(1001);
    expect(pacer.foregroundBusy).toBe(false);
    await pacer.run(async () => advance(50));
    expect(pauses).toEqual([]);
  });

  it('when the share is 1, then nothing is ever paced', () => {
    const pacer = new BackgroundPacer({ share: 1 });
    pacer.noteForeground();
    expect(pacer.foregroundBusy).toBe(false);
    expect(() => new BackgroundPacer({ share: 0 })).toThrow(RangeError);
  });
});
