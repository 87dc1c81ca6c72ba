import type { DeliveriesTable } from '../../storage/database.js';
import { type AttemptVerdict, nextRetryDelayMs, type RetryPolicy } from './retry-schedule.js';

/** Where a claimed delivery stood before its attempt. */
export interface DeliveryPosition {
  /** Scheduled attempts that failed so far: the position in the retry schedule. */
  failedScheduledAttempts: number;
  /** `manual` when the attempt was queued by a redelivery. */
  trigger: 'scheduled' | 'manual';
  /** For a manual attempt: an earlier attempt succeeded, so the delivery was `succeeded` before. */
  succeededBefore: boolean;
}

/** The state a delivery takes after an attempt. */
export interface DeliveryNextState {
  status: DeliveriesTable['status'];
  failedScheduledAttempts: number;
  nextAttemptAt: Date | null;
}

/**
 * The state of a delivery after an attempt judged `verdict` at `now`.
 *
 * - A success ends it `succeeded`; a 410 ends it `failed` (its webhook is disabled, see delivery-recorder.ts).
 * - A failed scheduled attempt moves one step along the schedule: pending again after the next delay, or
 *   `failed` for good once the schedule is exhausted (it stays listed for manual redelivery).
 * - A failed manual attempt (a redelivery) does not move the schedule. A delivery that had already ended
 *   returns to where it was: `failed` when its schedule was exhausted, `succeeded` when an earlier attempt
 *   succeeded. One still on its schedule (or cancelled before its schedule ran out, then redelivered after
 *   its webhook was re-enabled) continues the schedule from its position: the retry comes after the delay
 *   of its last failed step (the first step if none failed), as if the manual attempt had been that step.
 */
export function nextDeliveryState(
  policy: RetryPolicy,
  position: DeliveryPosition,
  verdict: AttemptVerdict,
  now: Date,
  random: () => number,
): DeliveryNextState {
  const failed = position.failedScheduledAttempts;
  if (verdict.kind === 'succeeded')
    return { status: 'succeeded', failedScheduledAttempts: failed, nextAttemptAt: null };
  if (verdict.kind === 'gone') {
    const counted = position.trigger === 'scheduled' ? failed + 1 : failed;
    return { status: 'failed', failedScheduledAttempts: counted, nextAttemptAt: null };
  }
  if (position.trigger === 'manual') {
    if (failed > policy.retryScheduleMs.length)
      return { status: 'failed', failedScheduledAttempts: failed, nextAttemptAt: null };
    if (position.succeededBefore)
      return { status: 'succeeded', failedScheduledAttempts: failed, nextAttemptAt: null };
    const delay = nextRetryDelayMs(policy, Math.max(failed, 1), verdict, random) ?? 0;
    return {
      status: 'pending',
      failedScheduledAttempts: failed,
      nextAttemptAt: new Date(now.getTime() + delay),
    };
  }
  const delay = nextRetryDelayMs(policy, failed + 1, verdict, random);
  if (delay === undefined)
    return { status: 'failed', failedScheduledAttempts: failed + 1, nextAttemptAt: null };
  return {
    status: 'pending',
    failedScheduledAttempts: failed + 1,
    nextAttemptAt: new Date(now.getTime() + delay),
  };
}
