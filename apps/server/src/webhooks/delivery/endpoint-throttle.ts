/** How an attempt went, for its endpoint's health: answered, failed (timeout, network, 5xx, 429), or neither. */
export type EndpointOutcome = 'answered' | 'failed' | 'neutral';

/** What to do with a delivery to an endpoint now. */
export type EndpointAdmission =
  | { kind: 'start' }
  /** Wait in the queue for an attempt to this endpoint to end (its concurrency, or a probe, in flight). */
  | { kind: 'wait' }
  /**
   * The circuit is open: give the delivery back, due again at `untilMs`, with no attempt made. `parked`:
   * put off past the cool-down (the circuit has stayed open, see EndpointThrottle), to be due again at once
   * when the endpoint answers a probe.
   */
  | { kind: 'defer'; untilMs: number; parked: boolean };

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
  /** How many times in a row the circuit opened (a failed probe opens it again); 0 once it answers. */
  opens: number;
  /** Deliveries put off to the end of the current cool-down, for its probe (at most PROBE_CANDIDATES). */
  keptForProbe: number;
}

/** Deliveries put off only to the end of a cool-down once the circuit opened again: enough for its probe. */
export const PROBE_CANDIDATES = 2;

/** The longest a delivery to an endpoint that stays cut off is put off at a time (unless a probe is answered). */
export const MAX_PARK_MS = 3_600_000;

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
 * - Parking, so that an endpoint that stays cut off costs next to nothing per delivery waiting for it:
 *   putting a delivery off is a claim and a write, and giving every due delivery back at the end of each
 *   cool-down rewrote the whole backlog every 30 s (1.6 million deliveries: three quarters of a core,
 *   forever). Once the circuit opened again (a probe failed), only PROBE_CANDIDATES deliveries per
 *   cool-down are put off to its end, for the next probe; the others are parked: put off for the cool-down
 *   doubled per failed probe in a row, at most MAX_PARK_MS (an hour), and made due again at once when a
 *   probe is answered (see `ended`). Not attempts: their retry schedule does not advance. The first
 *   opening puts every delivery off to the end of the cool-down, as before.
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
      if (nowMs < state.openUntil) {
        if (state.opens <= 1 || state.keptForProbe < PROBE_CANDIDATES) {
          state.keptForProbe++;
          return { kind: 'defer', untilMs: state.openUntil, parked: false };
        }
        const { cooldownMs } = this.#options;
        const parkMs = Math.min(MAX_PARK_MS, cooldownMs * 2 ** Math.min(state.opens - 1, 30));
        return { kind: 'defer', untilMs: state.openUntil + Math.max(0, parkMs - cooldownMs), parked: true };
      }
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
      this.#endpoints.set(endpoint, {
        inFlight: 1,
        failures: 0,
        limit: undefined,
        openUntil: undefined,
        opens: 0,
        keptForProbe: 0,
      });
    }
  }

  /**
   * An attempt to `endpoint` ended; `share` is its tenant's share of attempts in flight. Returns true when
   * it closed the circuit (an answer after it had opened): what was parked may be made due again.
   */
  ended(endpoint: string, outcome: EndpointOutcome, nowMs: number, share: number): boolean {
    const state = this.#endpoints.get(endpoint);
    if (state === undefined) return false;
    state.inFlight = Math.max(0, state.inFlight - 1);
    let closed = false;
    if (outcome === 'answered') {
      closed = state.opens > 0;
      state.failures = 0;
      state.openUntil = undefined;
      state.opens = 0;
      state.keptForProbe = 0;
      if (state.limit !== undefined) state.limit = state.limit + 1 >= share ? undefined : state.limit + 1;
    } else if (outcome === 'failed') {
      state.failures++;
      state.limit = Math.max(1, Math.floor((state.limit ?? share) / 2));
      const { threshold, cooldownMs } = this.#options;
      if (state.failures >= threshold) {
        // A new opening (not an attempt from before the cut-off failing while it is open).
        if (state.openUntil === undefined || nowMs >= state.openUntil) {
          state.opens++;
          state.keptForProbe = 0;
        }
        state.openUntil = nowMs + cooldownMs;
      }
    }
    if (state.inFlight === 0 && state.failures === 0 && state.limit === undefined)
      this.#endpoints.delete(endpoint);
    return closed;
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
