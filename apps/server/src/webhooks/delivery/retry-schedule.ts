import type { WebhookConfig } from '../webhook-config.js';

/** The part of the configuration that decides when a failed delivery is tried again. */
export type RetryPolicy = Pick<WebhookConfig, 'retryScheduleMs' | 'retryJitter' | 'throttledMinDelayMs'>;

/** A `Retry-After` is honoured up to this delay: a receiver cannot park a delivery for longer. */
export const MAX_RETRY_AFTER_MS = 86_400_000;

/** What one HTTP attempt came to: a status (0 when no response came) and why it failed, if it did. */
export interface AttemptResult {
  statusCode: number;
  /** `timeout`, `redirect`, `status 500`, a connection error…; null on success. */
  error: string | null;
  /** The raw `Retry-After` header of the response, if any. */
  retryAfter?: string | undefined;
}

/** What an attempt means for its delivery and its webhook. */
export type AttemptVerdict =
  | { kind: 'succeeded' }
  /** 410 Gone: the endpoint asked never to be called again. */
  | { kind: 'gone' }
  /** Any other failure; `throttled` after a 429 or a timeout, `retryAfterMs` when the receiver named a delay. */
  | { kind: 'failed'; throttled: boolean; retryAfterMs: number | undefined };

/** Judges an attempt: a 2xx is success, 410 is gone, everything else (3xx included) is a failure. */
export function judgeAttempt(result: AttemptResult, now: Date): AttemptVerdict {
  const { statusCode } = result;
  if (statusCode >= 200 && statusCode < 300 && result.error === null) return { kind: 'succeeded' };
  if (statusCode === 410) return { kind: 'gone' };
  return {
    kind: 'failed',
    throttled: statusCode === 429 || result.error === 'timeout',
    retryAfterMs: parseRetryAfterMs(result.retryAfter, now),
  };
}

/** `Retry-After` as a delay: delta-seconds or an HTTP date (RFC 9110 §10.2.3); undefined when absent or malformed. */
export function parseRetryAfterMs(value: string | undefined, now: Date): number | undefined {
  const text = value?.trim();
  if (!text) return undefined;
  if (/^[0-9]+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  // Only the IMF-fixdate shape (or its obsolete forms) names a date; Date.parse also takes "1" or "2025".
  if (Number.isNaN(date) || !/[a-z]/i.test(text)) return undefined;
  return Math.max(0, date - now.getTime());
}

/**
 * The delay before the next scheduled attempt after the `failedAttempts`-th failed one (1-based), or
 * undefined when the schedule is exhausted and the delivery has failed for good. The schedule's entry gets
 * ±`retryJitter` of jitter from `random` (a number in [0, 1)); a throttled failure waits at least
 * `throttledMinDelayMs`, and a `Retry-After` is honoured up to MAX_RETRY_AFTER_MS, whichever is longest.
 */
export function nextRetryDelayMs(
  policy: RetryPolicy,
  failedAttempts: number,
  verdict: { throttled: boolean; retryAfterMs: number | undefined },
  random: () => number,
): number | undefined {
  const scheduled = policy.retryScheduleMs[failedAttempts - 1];
  if (scheduled === undefined) return undefined;
  let delay = Math.round(scheduled * (1 + policy.retryJitter * (2 * random() - 1)));
  if (verdict.throttled) delay = Math.max(delay, policy.throttledMinDelayMs);
  if (verdict.retryAfterMs !== undefined)
    delay = Math.max(delay, Math.min(verdict.retryAfterMs, MAX_RETRY_AFTER_MS));
  return delay;
}
