import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_SCHEDULE_MS } from '../webhook-config.js';
import { judgeAttempt, MAX_RETRY_AFTER_MS, nextRetryDelayMs, parseRetryAfterMs } from './retry-schedule.js';

const policy = {
  retryScheduleMs: [...DEFAULT_RETRY_SCHEDULE_MS],
  retryJitter: 0.2,
  throttledMinDelayMs: 60_000,
};
const NOW = new Date('2026-11-22T10:00:00.000Z');
const middle = () => 0.5;
const plain = { throttled: false, retryAfterMs: undefined };

describe('the retry schedule', () => {
  it('waits the n-th delay of the Standard Webhooks schedule after the n-th failure, without jitter at the midpoint', () => {
    const delays = DEFAULT_RETRY_SCHEDULE_MS.map((_, n) => nextRetryDelayMs(policy, n + 1, plain, middle));
    expect(delays).toEqual([
      5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 50_400_000, 72_000_000, 86_400_000,
    ]);
  });

  it('jitters each delay by at most ±20 %', () => {
    expect(nextRetryDelayMs(policy, 2, plain, () => 0)).toBe(240_000);
    expect(nextRetryDelayMs(policy, 2, plain, () => 0.999_999)).toBe(360_000);
    expect(nextRetryDelayMs(policy, 2, plain, () => 0.25)).toBe(270_000);
  });

  it('gives up after the last entry: the delivery has failed', () => {
    expect(nextRetryDelayMs(policy, DEFAULT_RETRY_SCHEDULE_MS.length + 1, plain, middle)).toBeUndefined();
  });

  it('waits at least the throttled minimum after a 429 or a timeout', () => {
    expect(nextRetryDelayMs(policy, 1, { throttled: true, retryAfterMs: undefined }, middle)).toBe(60_000);
    expect(nextRetryDelayMs(policy, 2, { throttled: true, retryAfterMs: undefined }, middle)).toBe(300_000);
  });

  it('honours Retry-After when it is longer than the schedule, up to a day', () => {
    expect(nextRetryDelayMs(policy, 1, { throttled: true, retryAfterMs: 120_000 }, middle)).toBe(120_000);
    expect(nextRetryDelayMs(policy, 2, { throttled: false, retryAfterMs: 1_000 }, middle)).toBe(300_000);
    expect(
      nextRetryDelayMs(policy, 1, { throttled: false, retryAfterMs: 9 * MAX_RETRY_AFTER_MS }, middle),
    ).toBe(MAX_RETRY_AFTER_MS);
  });
});

describe('Retry-After', () => {
  it('reads delta-seconds and HTTP dates, and ignores anything else', () => {
    expect(parseRetryAfterMs('120', NOW)).toBe(120_000);
    expect(parseRetryAfterMs('Sun, 22 Nov 2026 10:05:00 GMT', NOW)).toBe(300_000);
    expect(parseRetryAfterMs('Sun, 22 Nov 2026 09:00:00 GMT', NOW)).toBe(0);
    expect(parseRetryAfterMs(undefined, NOW)).toBeUndefined();
    expect(parseRetryAfterMs('soon', NOW)).toBeUndefined();
    expect(parseRetryAfterMs('-5', NOW)).toBeUndefined();
  });
});

describe('judging an attempt', () => {
  it('counts a 2xx as success, 410 as gone, and everything else as a failure', () => {
    expect(judgeAttempt({ statusCode: 204, error: null }, NOW)).toEqual({ kind: 'succeeded' });
    expect(judgeAttempt({ statusCode: 410, error: 'HTTP 410' }, NOW)).toEqual({ kind: 'gone' });
    expect(judgeAttempt({ statusCode: 302, error: 'redirect' }, NOW)).toMatchObject({
      kind: 'failed',
      throttled: false,
    });
    expect(judgeAttempt({ statusCode: 500, error: 'HTTP 500', retryAfter: '30' }, NOW)).toEqual({
      kind: 'failed',
      throttled: false,
      retryAfterMs: 30_000,
    });
  });

  it('marks 429s and timeouts as throttled', () => {
    expect(judgeAttempt({ statusCode: 429, error: 'HTTP 429' }, NOW)).toMatchObject({ throttled: true });
    expect(judgeAttempt({ statusCode: 0, error: 'timeout' }, NOW)).toMatchObject({ throttled: true });
    expect(judgeAttempt({ statusCode: 0, error: 'ECONNREFUSED: connect' }, NOW)).toMatchObject({
      throttled: false,
    });
  });
});
