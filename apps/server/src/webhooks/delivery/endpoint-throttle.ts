/** How an attempt went, for its endpoint's health: answered, failed (timeout, network, 5xx, 429), or neither. */
export type EndpointOutcome = 'answered' | 'failed' | 'neutral';

/** What to do with a delivery to an endpoint now. */
export type EndpointAdmission =
  | { kind: 'start' }
  /** Wait in the queue for an attempt to this endpoint to end (its concurrency, or a probe, in flight). */
  | { kind: 'wait' }
  /** The circuit is open: give the delivery back, due again at `untilMs`, with no attempt made. */
  | { kind: 'defer'; untilMs: number };

export interface EndpointThrottleOptions {
  /** Consecutive failures that open the circuit; 0 turns the throttle off (no limit, no circuit). */
  threshold: number;
  /** How long an open circuit stays open before one probe attempt is let through. */
  cooldownMs: number;
}

interface EndpointState {
  inFlight: number;
  /** Failures since the last answer. */
  failures: number;
  /** The most attempts in flight at once; undefined: only the tenant's share bounds them. */
  limit: number | undefined;
  /** Set while the circuit is open (or half-open, once passed). */
  openUntil: number | undefined;
}

/** Past this many endpoints remembered, idle ones whose circuit is not open are forgotten. */
const MAX_REMEMBERED = 10_000;

/**
 * Throttles a slow or failing endpoint before it costs others (one instance's view, in memory):
 *
 * - Concurrency that adapts: an endpoint has no limit of its own (its tenant's share bounds it) until an
 *   attempt fails; each failure halves its limit (from the tenant's share, down to 1), each answer raises
 *   it by one, and once it reaches the share the limit is gone. So a receiver that hangs holds one slot,
 *   not the tenant's whole share, after a few timeouts.
 * - A circuit breaker: `threshold` consecutive failures open the circuit; while it is open no attempt is
 *   made, the deliveries are given back due at the end of the cool-down (not attempts: their retry
 *   schedule does not advance). After the cool-down it is half-open: one attempt (the probe) is let
 *   through while the others wait; an answer closes the circuit, a failure opens it for another cool-down.
 *
 * An endpoint is the tenant and the URL's origin (scheme, host, port): a tenant's 50 webhooks to one
 * receiver are one endpoint, and another tenant's webhooks to the same host are not throttled with them.
 */
export class EndpointThrottle {
  readonly #options: EndpointThrottleOptions;
  readonly #endpoints = new Map<string, EndpointState>();

  constructor(options: EndpointThrottleOptions) {
    this.#options = options;
  }

  /** Whether a delivery to `endpoint` may start now. */
  admit(endpoint: string, nowMs: number): EndpointAdmission {
    if (this.#options.threshold === 0) return { kind: 'start' };
    const state = this.#endpoints.get(endpoint);
    if (state === undefined) return { kind: 'start' };
    if (state.openUntil !== undefined) {
      if (nowMs < state.openUntil) return { kind: 'defer', untilMs: state.openUntil };
      // Half-open: one probe at a time (an attempt still in flight from before counts as one).
      return state.inFlight > 0 ? { kind: 'wait' } : { kind: 'start' };
    }
    if (state.limit !== undefined && state.inFlight >= state.limit) return { kind: 'wait' };
    return { kind: 'start' };
  }

  /** An attempt to `endpoint` started. */
  started(endpoint: string, nowMs: number): void {
    if (this.#options.threshold === 0) return;
    const state = this.#endpoints.get(endpoint);
    if (state) state.inFlight++;
    else {
      this.#forgetIdle(nowMs);
      this.#endpoints.set(endpoint, { inFlight: 1, failures: 0, limit: undefined, openUntil: undefined });
    }
  }

  /** An attempt to `endpoint` ended; `share` is its tenant's share of attempts in flight. */
  ended(endpoint: string, outcome: EndpointOutcome, nowMs: number, share: number): void {
    const state = this.#endpoints.get(endpoint);
    if (state === undefined) return;
    state.inFlight = Math.max(0, state.inFlight - 1);
    if (outcome === 'answered') {
      state.failures = 0;
      state.openUntil = undefined;
      if (state.limit !== undefined) state.limit = state.limit + 1 >= share ? undefined : state.limit + 1;
    } else if (outcome === 'failed') {
      state.failures++;
      state.limit = Math.max(1, Math.floor((state.limit ?? share) / 2));
      const { threshold, cooldownMs } = this.#options;
      if (state.failures >= threshold) state.openUntil = nowMs + cooldownMs;
    }
    if (state.inFlight === 0 && state.failures === 0 && state.limit === undefined)
      this.#endpoints.delete(endpoint);
  }

  /** How many endpoints it remembers (for tests). */
  get size(): number {
    return this.#endpoints.size;
  }

  #forgetIdle(now: number): void {
    if (this.#endpoints.size < MAX_REMEMBERED) return;
    for (const [endpoint, state] of this.#endpoints)
      if (state.inFlight === 0 && (state.openUntil === undefined || state.openUntil < now))
        this.#endpoints.delete(endpoint);
  }
}

/** The endpoint of a delivery: its tenant and its URL's origin (the URL itself if it does not parse). */
export function endpointOf(tenantId: string, url: string): string {
  let origin = url;
  try {
    origin = new URL(url).origin;
  } catch {
    // Kept whole: such a webhook's attempts fail alone.
  }
  return `${tenantId} ${origin}`;
}

/** An attempt's meaning for its endpoint: a timeout, a network error, a 5xx or a 429 is a failure. */
export function endpointOutcome(
  sent: { statusCode: number; error: string | null },
  requested: boolean,
): EndpointOutcome {
  if (!requested) return 'neutral';
  if (sent.statusCode === 0 || sent.statusCode >= 500 || sent.statusCode === 429) return 'failed';
  return 'answered';
}
