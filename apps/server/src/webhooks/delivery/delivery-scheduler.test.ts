import { describe, expect, it } from 'vitest';
import type { ClaimedDelivery } from './delivery-claims.js';
import { DeliveryScheduler, STATUS_RECHECK_MS } from './delivery-scheduler.js';

const LEASE_MS = 60_000;

/**
 * A scheduler of 2 slots (one tenant's share: 1 in flight, 1 queued) whose attempts end when the test says,
 * on a clock the test moves; what it starts, gives back and looks up is noted.
 */
function scheduler(
  inactive: (webhookIds: readonly string[]) => Promise<ReadonlySet<string>> = async () => new Set(),
) {
  let nowMs = Date.parse('2030-01-01T00:00:00Z');
  const started: string[] = [];
  const givenBack: string[] = [];
  const lookedUp: string[][] = [];
  const ends = new Map<string, () => void>();
  const instance = new DeliveryScheduler({
    config: {
      concurrency: 2,
      tenantConcurrency: 1,
      leaseMs: LEASE_MS,
      timeoutMs: 15_000,
      breakerThreshold: 0,
      breakerCooldownMs: 1_000,
    },
    clock: { now: () => new Date(nowMs) },
    attempt: (delivery) => {
      started.push(delivery.id);
      return new Promise((resolve) => ends.set(delivery.id, () => resolve('neutral')));
    },
    giveBack: (deliveries) => givenBack.push(...deliveries.map((delivery) => delivery.id)),
    defer: () => undefined,
    resume: () => undefined,
    wake: () => undefined,
    unrecorded: () => 0,
    inactiveWebhooks: (webhookIds) => {
      lookedUp.push([...webhookIds]);
      return inactive(webhookIds);
    },
  });
  /** A delivery of `webhookId` (tenant t1) claimed now. */
  const claimed = (id: string, webhookId: string): ClaimedDelivery => ({
    id,
    tenantId: 't1',
    webhookId,
    eventId: `evt-${id}`,
    lockedUntil: new Date(nowMs + LEASE_MS).toISOString(),
    failedScheduledAttempts: 0,
    trigger: 'scheduled',
    succeededBefore: false,
    dueAt: new Date(nowMs).toISOString(),
    url: `http://127.0.0.1:9/${webhookId}`,
    webhookActive: true,
    payload: '{}',
    secrets: ['whsec_x'],
  });
  /** Claims `deliveries` as the loop does: plan, accept, settle. */
  const claim = (deliveries: ClaimedDelivery[]) => {
    const plan = instance.planClaim();
    if (plan === undefined) throw new Error('no room to claim');
    instance.accept(deliveries, plan);
    instance.settle(plan);
  };
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  return {
    instance,
    claimed,
    claim,
    started,
    givenBack,
    lookedUp,
    async end(id: string) {
      ends.get(id)?.();
      await settle();
    },
    advance(ms: number) {
      nowMs += ms;
    },
    settle,
  };
}

describe('the delivery scheduler and deleted or disabled webhooks', () => {
  it('gives back, never starts, the queued deliveries of a webhook retired; the one in flight goes on', async () => {
    const s = scheduler();
    s.claim([s.claimed('a1', 'wh_a'), s.claimed('a2', 'wh_a')]);
    expect(s.started).toEqual(['a1']);
    s.instance.retire(['wh_a']);
    expect(s.givenBack).toEqual(['a2']);
    await s.end('a1');
    expect(s.started).toEqual(['a1']);
    await s.instance.drain();
  });

  it('gives back what a claim under way brings of a webhook retired meanwhile; a claim planned after keeps it', async () => {
    const s = scheduler();
    const plan = s.instance.planClaim();
    if (plan === undefined) throw new Error('no room to claim');
    // The claim read the webhook active, then the webhook was deleted, then the claim came back.
    s.instance.retire(['wh_a']);
    s.instance.accept([s.claimed('a1', 'wh_a'), s.claimed('b1', 'wh_b')], plan);
    s.instance.settle(plan);
    expect(s.started).toEqual(['b1']);
    expect(s.givenBack).toEqual(['a1']);
    await s.end('b1');
    // Re-enabled since: a later claim's deliveries of it start.
    s.claim([s.claimed('a2', 'wh_a')]);
    expect(s.started).toEqual(['b1', 'a2']);
    await s.end('a2');
    await s.instance.drain();
  });

  it(`starts a delivery queued over ${STATUS_RECHECK_MS} ms only once its webhook is looked up again and found active`, async () => {
    const s = scheduler();
    s.claim([s.claimed('a1', 'wh_a'), s.claimed('a2', 'wh_a')]);
    s.advance(STATUS_RECHECK_MS + 1);
    await s.end('a1');
    expect(s.lookedUp).toEqual([['wh_a']]);
    expect(s.started).toEqual(['a1', 'a2']);
    await s.end('a2');
    // Found active: its next queued delivery within the bound is not looked up again.
    s.claim([s.claimed('a3', 'wh_a'), s.claimed('a4', 'wh_a')]);
    s.advance(STATUS_RECHECK_MS / 2);
    await s.end('a3');
    expect(s.started).toEqual(['a1', 'a2', 'a3', 'a4']);
    expect(s.lookedUp).toHaveLength(1);
    await s.end('a4');
    await s.instance.drain();
  });

  it('gives back a delivery queued too long whose webhook is found deleted or disabled, or when the look-up fails', async () => {
    for (const lookUp of [async () => new Set(['wh_a']), () => Promise.reject(new Error('database down'))]) {
      const s = scheduler(lookUp);
      s.claim([s.claimed('a1', 'wh_a'), s.claimed('a2', 'wh_a')]);
      s.advance(STATUS_RECHECK_MS + 1);
      await s.end('a1');
      expect(s.lookedUp).toEqual([['wh_a']]);
      expect(s.started).toEqual(['a1']);
      expect(s.givenBack).toEqual(['a2']);
      await s.instance.drain();
    }
  });
});
