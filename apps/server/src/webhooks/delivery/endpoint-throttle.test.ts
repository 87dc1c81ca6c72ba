import { describe, expect, it } from 'vitest';
import { EndpointThrottle, endpointOf, endpointOutcome } from './endpoint-throttle.js';

const SHARE = 8;

/** Starts `count` attempts to `endpoint` that the throttle admits, and returns how many it admitted. */
function startAll(throttle: EndpointThrottle, endpoint: string, count: number, nowMs: number): number {
  let started = 0;
  for (let n = 0; n < count; n++) {
    if (throttle.admit(endpoint, nowMs).kind !== 'start') break;
    throttle.started(endpoint, nowMs);
    started++;
  }
  return started;
}

describe('the endpoint throttle', () => {
  it('halves the concurrency of an endpoint on each failure, down to one, and lifts it again as it answers', () => {
    const throttle = new EndpointThrottle({ threshold: 1_000, cooldownMs: 1_000 });
    expect(startAll(throttle, 'e', 20, 0)).toBe(20);
    // Its attempts hang and time out: 4, 2, 1, 1, ... may be in flight.
    throttle.ended('e', 'failed', 10, SHARE);
    expect(throttle.admit('e', 10)).toEqual({ kind: 'wait' });
    for (let n = 0; n < 19; n++) throttle.ended('e', 'failed', 10, SHARE);
    expect(startAll(throttle, 'e', 5, 10)).toBe(1);
    expect(throttle.admit('e', 10)).toEqual({ kind: 'wait' });
    throttle.ended('e', 'answered', 20, SHARE);
    expect(startAll(throttle, 'e', 5, 20)).toBe(2);
    for (let n = 0; n < 2; n++) throttle.ended('e', 'answered', 30, SHARE);
    // Lifted step by step until it reaches the tenant's share; then forgotten.
    for (let n = 0; n < SHARE; n++) throttle.ended('e', 'answered', 30, SHARE);
    expect(throttle.size).toBe(0);
    expect(startAll(throttle, 'e', 20, 40)).toBe(20);
  });

  it('opens the circuit after the threshold of consecutive failures, and half-opens it after the cool-down for one probe', () => {
    const throttle = new EndpointThrottle({ threshold: 3, cooldownMs: 1_000 });
    for (let n = 0; n < 2; n++) {
      startAll(throttle, 'e', 1, 0);
      throttle.ended('e', 'failed', 100, SHARE);
    }
    expect(throttle.admit('e', 100).kind).toBe('start');
    throttle.started('e', 100);
    throttle.ended('e', 'failed', 200, SHARE);
    // Open: deliveries are put off until the cool-down ends, not attempted.
    expect(throttle.admit('e', 200)).toEqual({ kind: 'defer', untilMs: 1_200, parked: false });
    expect(throttle.admit('e', 1_199)).toEqual({ kind: 'defer', untilMs: 1_200, parked: false });
    // Half-open: one probe, the others wait for it.
    expect(throttle.admit('e', 1_200)).toEqual({ kind: 'start' });
    throttle.started('e', 1_200);
    expect(throttle.admit('e', 1_201)).toEqual({ kind: 'wait' });
    // The probe fails: open for another cool-down.
    throttle.ended('e', 'failed', 1_500, SHARE);
    expect(throttle.admit('e', 1_500)).toEqual({ kind: 'defer', untilMs: 2_500, parked: false });
    // The next probe is answered: closed.
    throttle.started('e', 2_500);
    expect(throttle.ended('e', 'answered', 2_600, SHARE)).toBe(true);
    expect(throttle.admit('e', 2_600)).toEqual({ kind: 'start' });
  });

  it('while the circuit stays open, keeps a few deliveries for each probe and parks the others longer each time', () => {
    const throttle = new EndpointThrottle({ threshold: 1, cooldownMs: 1_000 });
    throttle.started('e', 0);
    expect(throttle.ended('e', 'failed', 0, SHARE)).toBe(false);
    // Opened once: every delivery is put off to the end of the cool-down, as before.
    for (let n = 0; n < 5; n++)
      expect(throttle.admit('e', 10)).toEqual({ kind: 'defer', untilMs: 1_000, parked: false });
    // A probe fails: opened again. Two deliveries wait for the next probe, the rest are parked for twice the
    // cool-down, and each further failed probe doubles it, up to an hour.
    let now = 1_000;
    let parkMs = 2_000;
    for (let opening = 2; opening <= 16; opening++) {
      expect(throttle.admit('e', now)).toEqual({ kind: 'start' });
      throttle.started('e', now);
      expect(throttle.ended('e', 'failed', now, SHARE)).toBe(false);
      const openUntil = now + 1_000;
      expect(throttle.admit('e', now)).toEqual({ kind: 'defer', untilMs: openUntil, parked: false });
      expect(throttle.admit('e', now)).toEqual({ kind: 'defer', untilMs: openUntil, parked: false });
      expect(throttle.admit('e', now)).toEqual({ kind: 'defer', untilMs: now + parkMs, parked: true });
      expect(throttle.admit('e', now + 999)).toEqual({ kind: 'defer', untilMs: now + parkMs, parked: true });
      parkMs = Math.min(parkMs * 2, 3_600_000);
      now = openUntil;
    }
    // A probe is answered: closed, and said so (what was parked is resumed); parking starts over.
    throttle.started('e', now);
    expect(throttle.ended('e', 'answered', now, SHARE)).toBe(true);
    throttle.started('e', now);
    throttle.ended('e', 'failed', now, SHARE);
    expect(throttle.admit('e', now)).toEqual({ kind: 'defer', untilMs: now + 1_000, parked: false });
    expect(throttle.admit('e', now)).toEqual({ kind: 'defer', untilMs: now + 1_000, parked: false });
    expect(throttle.admit('e', now)).toEqual({ kind: 'defer', untilMs: now + 1_000, parked: false });
  });

  it('counts failures only in a row: an answer in between resets them', () => {
    const throttle = new EndpointThrottle({ threshold: 3, cooldownMs: 1_000 });
    for (const outcome of ['failed', 'failed', 'answered', 'failed', 'failed', 'neutral'] as const) {
      throttle.started('e', 0);
      throttle.ended('e', outcome, 0, SHARE);
    }
    expect(throttle.admit('e', 0).kind).not.toBe('defer');
  });

  it('throttles nothing with a threshold of 0', () => {
    const throttle = new EndpointThrottle({ threshold: 0, cooldownMs: 1_000 });
    expect(startAll(throttle, 'e', 20, 0)).toBe(20);
    for (let n = 0; n < 100; n++) {
      throttle.started('e', 0);
      throttle.ended('e', 'failed', 0, SHARE);
    }
    expect(startAll(throttle, 'e', 20, 0)).toBe(20);
    expect(throttle.size).toBe(0);
  });

  it("keeps endpoints apart: another endpoint, or another tenant's webhooks to the same host", () => {
    const throttle = new EndpointThrottle({ threshold: 1, cooldownMs: 1_000 });
    const mine = endpointOf('t1', 'https://hooks.example.com/a');
    expect(endpointOf('t1', 'https://hooks.example.com:443/b?x=1')).toBe(mine);
    throttle.started(mine, 0);
    throttle.ended(mine, 'failed', 0, SHARE);
    expect(throttle.admit(mine, 1).kind).toBe('defer');
    expect(throttle.admit(endpointOf('t2', 'https://hooks.example.com/a'), 1).kind).toBe('start');
    expect(throttle.admit(endpointOf('t1', 'https://other.example.com/a'), 1).kind).toBe('start');
  });
});

it('counts timeouts, network errors, 5xx and 429 against an endpoint, and an attempt with no request not at all', () => {
  expect(endpointOutcome({ statusCode: 0, error: 'timeout' }, true)).toBe('failed');
  expect(endpointOutcome({ statusCode: 0, error: 'ECONNREFUSED' }, true)).toBe('failed');
  expect(endpointOutcome({ statusCode: 503, error: 'HTTP 503' }, true)).toBe('failed');
  expect(endpointOutcome({ statusCode: 429, error: 'HTTP 429' }, true)).toBe('failed');
  expect(endpointOutcome({ statusCode: 200, error: null }, true)).toBe('answered');
  expect(endpointOutcome({ statusCode: 404, error: 'HTTP 404' }, true)).toBe('answered');
  expect(endpointOutcome({ statusCode: 0, error: 'no signing secret' }, false)).toBe('neutral');
});
