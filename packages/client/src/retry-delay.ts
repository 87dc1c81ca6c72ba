/**
 * The milliseconds a `Retry-After` header asks to wait: delay-seconds or an HTTP-date (RFC 9110 §10.2.3).
 * Null when the header is absent or unreadable, so that the caller falls back to backoff.
 */
export function retryAfterMs(header: string | null, nowMs: number): number | null {
  if (header === null) return null;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  if (Number.isNaN(date)) return null;
  return Math.max(0, date - nowMs);
}

/**
 * Exponential backoff with "equal jitter": the wait before retry number `retry` (0 for the first) is
 * between half and all of `min(maxDelayMs, baseDelayMs · 2^retry)`, so retries spread out without ever
 * collapsing to zero. `random` is a number in [0, 1).
 */
export function backoffMs(retry: number, baseDelayMs: number, maxDelayMs: number, random: number): number {
  const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** retry);
  return ceiling / 2 + (random * ceiling) / 2;
}
