import { describe, expect, it } from 'vitest';
import { nextDeliveryState } from './delivery-outcome.js';
import type { AttemptVerdict } from './retry-schedule.js';

const policy = { retryScheduleMs: [1_000, 2_000, 4_000], retryJitter: 0.2, throttledMinDelayMs: 60_000 };
const NOW = new Date('2026-11-22T10:00:00.000Z');
const at = (ms: number) => new Date(NOW.getTime() + ms);
const middle = () => 0.5;
const failed: AttemptVerdict = { kind: 'failed', throttled: false, retryAfterMs: undefined };
const scheduled = (failedScheduledAttempts: number) => ({
  failedScheduledAttempts,
  trigger: 'scheduled' as const,
  succeededBefore: false,
});
const manual = (failedScheduledAttempts: number, succeededBefore = false) => ({
  failedScheduledAttempts,
  trigger: 'manual' as const,
  succeededBefore,
});

describe('a delivery after a scheduled attempt', () => {
  it('succeeds on a 2xx', () => {
    expect(nextDeliveryState(policy, scheduled(2), { kind: 'succeeded' }, NOW, middle)).toEqual({
      status: 'succeeded',
      failedScheduledAttempts: 2,
      nextAttemptAt: null,
    });
  });

  it('moves one step along the schedule on a failure', () => {
    expect(nextDeliveryState(policy, scheduled(0), failed, NOW, middle)).toEqual({
      status: 'pending',
      failedScheduledAttempts: 1,
      nextAttemptAt: at(1_000),
    });
    expect(nextDeliveryState(policy, scheduled(2), failed, NOW, middle).nextAttemptAt).toEqual(at(4_000));
  });

  it('fails for good when the schedule is exhausted', () => {
    expect(nextDeliveryState(policy, scheduled(3), failed, NOW, middle)).toEqual({
      status: 'failed',
      failedScheduledAttempts: 4,
      nextAttemptAt: null,
    });
  });

  it('fails at once on a 410', () => {
    expect(nextDeliveryState(policy, scheduled(0), { kind: 'gone' }, NOW, middle)).toMatchObject({
      status: 'failed',
    });
  });
});

describe('a delivery after a failed manual attempt (a redelivery)', () => {
  it('goes back to failed, with no further schedule, when its schedule was exhausted', () => {
    expect(nextDeliveryState(policy, manual(4), failed, NOW, middle)).toEqual({
      status: 'failed',
      failedScheduledAttempts: 4,
      nextAttemptAt: null,
    });
  });

  it('goes back to succeeded when an earlier attempt succeeded', () => {
    expect(nextDeliveryState(policy, manual(1, true), failed, NOW, middle)).toMatchObject({
      status: 'succeeded',
      nextAttemptAt: null,
    });
  });

  it('continues its schedule from where it was, without moving it, when it was still pending', () => {
    expect(nextDeliveryState(policy, manual(2), failed, NOW, middle)).toEqual({
      status: 'pending',
      failedScheduledAttempts: 2,
      nextAttemptAt: at(2_000),
    });
    expect(nextDeliveryState(policy, manual(0), failed, NOW, middle).nextAttemptAt).toEqual(at(1_000));
  });
});
