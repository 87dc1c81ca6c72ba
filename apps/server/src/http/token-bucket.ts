/**
 * A token bucket's state: `tokens` left as of `updatedAt` (ms). It holds at most `perSecond` tokens and
 * refills at `perSecond` a second. Shared by the per-key rate limit and the limit on unknown keys.
 */
export interface TokenBucket {
  tokens: number;
  updatedAt: number;
}

const MS_PER_SECOND = 1000;

/** The tokens `bucket` holds at `time` (ms), refilled since its `updatedAt`; a bucket not made yet is full. */
export function tokensAt(bucket: TokenBucket | undefined, time: number, perSecond: number): number {
  if (bucket === undefined) return perSecond;
  return Math.min(perSecond, bucket.tokens + (time - bucket.updatedAt) * (perSecond / MS_PER_SECOND));
}

/** Whole seconds (rounded up) until a bucket holding `tokens` holds `target`. */
export function secondsUntil(tokens: number, target: number, perSecond: number): number {
  return Math.ceil((target - tokens) / (perSecond / MS_PER_SECOND) / MS_PER_SECOND);
}

/** The `Retry-After` of a request refused by an empty bucket: until it holds one token, at least 1 s. */
export function retryAfterSeconds(tokens: number, perSecond: number): number {
  return Math.max(1, secondsUntil(tokens, 1, perSecond));
}
