import type { Clock } from '../../common/clock.js';
import { reservedSlots, tenantShare } from '../../workers/fair-share.js';
import type { WebhookConfig } from '../webhook-config.js';
import type { ClaimedDelivery } from './delivery-claims.js';
import { type EndpointOutcome, EndpointThrottle, endpointOf } from './endpoint-throttle.js';
import { TenantCounts } from './tenant-counts.js';

/** Endpoints whose parked webhooks a scheduler remembers (to resume them when they answer again). */
const MAX_PARKED_ENDPOINTS = 10_000;

/**
 * How often a webhook that answered is looked at for deliveries parked by another instance, or by this one
 * before a restart (an index probe when there are none): about the longest parking (EndpointThrottle).
 */
const PARKED_LOOK_INTERVAL_MS = 60 * 60 * 1000;

/**
 * The longest a queued delivery starts after its webhook was last read active, at its claim or looked up
 * again: one held longer waits while its webhook is looked up (one statement for every such webhook, see
 * DeliverySchedulerOptions.inactiveWebhooks), and is dropped if it was deleted or disabled meanwhile. This
 * instance's own deletions and disablings drop queued deliveries at once (see DeliveryScheduler.retire);
 * this bounds those of other instances sharing the database. Deliveries start within a few milliseconds
 * of their claim unless slots are busy, so under load with answering receivers nothing is looked up.
 */
export const STATUS_RECHECK_MS = 1_000;

/** Outcomes per slot that may wait for their write before the worker stops claiming. */
const MAX_UNRECORDED_PER_SLOT = 4;

/**
 * The worker claims up to its concurrency more than it has free slots, and keeps those in a queue that
 * starts them as slots free up: fewer, larger claims (each costs a statement or three, and the details and
 * secrets of its deliveries), and no slot idles while a claim is on its way: the next claim starts once a
 * quarter of the room is free, while the queue still holds up to a quarter of it, enough to keep every
 * slot busy during the round trips of a claim. Only when the lease is
 * at least this many attempt timeouts long: the queue never holds more than the concurrency, so a queued
 * delivery waits for one attempt to end at most (each slot frees once within a timeout), and its lease
 * still has at least two attempt timeouts left when it starts.
 */
const PREFETCH_MIN_LEASE_TIMEOUTS = 3;

/** What a scheduler decides for, and what it calls to act on its decisions. */
export interface DeliverySchedulerOptions {
  config: Pick<
    WebhookConfig,
    'concurrency' | 'tenantConcurrency' | 'leaseMs' | 'timeoutMs' | 'breakerThreshold' | 'breakerCooldownMs'
  >;
  clock: Clock;
  /** Makes the attempt of a delivery the scheduler started; resolves with what it says of the endpoint. */
  attempt(delivery: ClaimedDelivery): Promise<EndpointOutcome>;
  /** Gives claims back now, due as they were (the scheduler no longer counts them). */
  giveBack(deliveries: readonly ClaimedDelivery[]): void;
  /**
   * Gives claims back due at `untilMs`, with no attempt (their endpoint's circuit is open); `parked`: marked
   * so that `resume` makes them due again at once.
   */
  defer(deliveries: readonly ClaimedDelivery[], untilMs: number, parked: boolean): void;
  /** Makes the parked deliveries of these webhooks due now: their endpoint answered again. */
  resume(webhookIds: readonly string[]): void;
  /** Wakes the loop: there may be room to claim again. */
  wake(): void;
  /** How many outcomes wait for their write: beyond a bound, there is no room to claim. */
  unrecorded(): number;
  /**
   * Which of these webhooks are no longer active (deleted or disabled), in one statement: asked of those
   * whose queued deliveries were read active more than STATUS_RECHECK_MS ago. Rejects if it cannot tell.
   */
  inactiveWebhooks(webhookIds: readonly string[]): Promise<ReadonlySet<string>>;
}

/**
 * What one claim (or the claim of a fan-out) may take: at most `limit` deliveries, none for a tenant
 * beyond `tenantCap` counting what the worker held for it when the claim was planned (`held`).
 * `newcomers`: a claim for the reserved slots alone, one delivery per tenant.
 */
export interface ClaimPlan {
  readonly limit: number;
  readonly tenantCap: number;
  readonly held: ReadonlyMap<string, number>;
  readonly newcomers: boolean;
}

/**
 * Decides what a delivery worker claims and for whom, and when each claimed delivery starts: the slots
 * (`concurrency` attempts in flight, and as many claimed ahead when the lease allows), each tenant's
 * share of them (see tenantShare), the slots reserved for tenants with no attempt in flight (see
 * reservedSlots), the endpoint throttle and circuit breaker (see EndpointThrottle), when to wake the loop
 * to claim again, and which claimed deliveries never start because their webhook was deleted or disabled
 * (see retire and STATUS_RECHECK_MS). It holds no connection and makes no request: the worker claims what
 * a plan says, hands the result to `accept`, and makes the attempts the scheduler starts through
 * `options.attempt`.
 */
export class DeliveryScheduler {
  readonly #options: DeliverySchedulerOptions;
  /** Claimed deliveries waiting for a slot, in the order they were claimed (see claimDueDeliveries). */
  #queue: ClaimedDelivery[] = [];
  readonly #inFlight = new Set<Promise<void>>();
  /** The deliveries this worker holds (queued or in flight), by tenant: no tenant holds more than its cap. */
  readonly #held = new TenantCounts();
  /**
   * Tenants that reached their cap: a tenant whose deliveries are due may wait on its own attempts alone,
   * with slots free, so the loop claims again once a quarter of its cap has freed up.
   */
  readonly #atCap = new Set<string>();
  /** The attempts in flight, by tenant: none starts beyond the tenant's share (see #share). */
  readonly #inFlightByTenant = new TenantCounts();
  /** Deliveries claimed beyond the free slots (see PREFETCH_MIN_LEASE_TIMEOUTS). */
  readonly #prefetch: number;
  /** Slots only a tenant with no attempt in flight may take (see reservedSlots). */
  readonly #reservedSlots: number;
  /** Slows down and cuts off endpoints that fail or hang (one instance's view). */
  readonly #throttle: EndpointThrottle;
  /** The webhooks whose deliveries this worker parked, by endpoint: resumed when it answers a probe. */
  readonly #parked = new Map<string, Set<string>>();
  /** When each webhook that answered was last looked at for parked deliveries this scheduler did not park. */
  readonly #lookedAt = new Map<string, number>();
  /** Deliveries the claims and the fan-out under way may bring: counted as taken room. */
  #reserved = 0;
  /** The claims under way (planned, not yet settled), each with the webhooks retired meanwhile, if any. */
  readonly #underWay = new Map<ClaimPlan, Set<string> | undefined>();
  /** When a webhook looked up again (see STATUS_RECHECK_MS) was found active, by webhook. */
  readonly #foundActiveAt = new Map<string, number>();
  /** The webhooks of queued deliveries read active too long ago, to look up in the next statement. */
  readonly #toLookUp = new Set<string>();
  /** The look-up under way, if any (one at a time). */
  #lookUp: Promise<void> | undefined;
  #halted = false;
  /**
   * Set by the loop while it sleeps with no room left (or after a claim that got all it asked for): an
   * attempt that ends then wakes it once a quarter of the room is free, for fewer, larger claims.
   */
  waitingForSlots = false;

  constructor(options: DeliverySchedulerOptions) {
    this.#options = options;
    const { concurrency, leaseMs, timeoutMs, breakerThreshold, breakerCooldownMs } = options.config;
    this.#prefetch = leaseMs >= PREFETCH_MIN_LEASE_TIMEOUTS * timeoutMs ? concurrency : 0;
    this.#reservedSlots = reservedSlots(concurrency);
    this.#throttle = new EndpointThrottle({ threshold: breakerThreshold, cooldownMs: breakerCooldownMs });
  }

  /**
   * The next claim of the loop, or undefined when there is no room at all. Its `limit` counts as taken
   * until `settle`. With no room, tenants holding nothing may still take the reserved slots: one
   * delivery each (`newcomers`).
   */
  planClaim(): ClaimPlan | undefined {
    const room = this.#room();
    const newcomers = room <= 0;
    const limit = newcomers ? this.#room(this.#reservedSlots) : room;
    if (limit <= 0) return undefined;
    this.#reserved += limit;
    const plan = {
      limit,
      tenantCap: newcomers ? 1 : this.#heldCap(),
      held: this.#held.snapshot(),
      newcomers,
    };
    this.#underWay.set(plan, undefined);
    return plan;
  }

  /**
   * The claim of a fan-out: up to half the room (saving a round of claims; the loop's claims take the
   * rest), possibly 0. Its `limit` counts as taken until `settle`.
   */
  planFanOut(): ClaimPlan {
    const limit = Math.max(0, this.#room() >> 1);
    this.#reserved += limit;
    const plan = { limit, tenantCap: this.#heldCap(), held: this.#held.snapshot(), newcomers: false };
    this.#underWay.set(plan, undefined);
    return plan;
  }

  /** The claim planned by `plan` has ended (taken, failed, or nothing found): its room is free again. */
  settle(plan: ClaimPlan): void {
    this.#reserved -= plan.limit;
    this.#underWay.delete(plan);
  }

  /**
   * These webhooks were deleted or disabled (committed): their deliveries queued here, and those a claim
   * under way brings, are dropped, never started: given back (the database cancelled them and cleared their
   * claims already, or a claim cancels them). Attempts in flight go on.
   */
  retire(webhookIds: readonly string[]): void {
    const retired = new Set(webhookIds);
    for (const [plan, noted] of this.#underWay) {
      const all = noted ?? new Set<string>();
      for (const webhookId of retired) all.add(webhookId);
      this.#underWay.set(plan, all);
    }
    this.#dropQueued((delivery) => retired.has(delivery.webhookId));
  }

  /**
   * Queues what a claim planned by `plan` took and starts what may start. A tenant given its cap by a
   * claim and a fan-out side by side has the second's deliveries given back. A tenant that got all its
   * cap allowed may have more due, held back only by its own attempts: it is marked, and the loop is woken
   * once a quarter of its cap is free, however few it holds by then. A claim for newcomers marks none.
   */
  accept(claimed: readonly ClaimedDelivery[], plan: ClaimPlan): void {
    const { held: heldBefore, tenantCap: cap } = plan;
    const taken = new TenantCounts();
    const excess: ClaimedDelivery[] = [];
    // Deliveries of webhooks retired while the claim was on its way, read active maybe before that.
    const retired = this.#underWay.get(plan);
    const dropped: ClaimedDelivery[] = [];
    for (const delivery of claimed) {
      if (retired?.has(delivery.webhookId) && delivery.webhookActive) {
        dropped.push(delivery);
        continue;
      }
      if (this.#held.get(delivery.tenantId) >= cap) {
        excess.push(delivery);
        continue;
      }
      this.#held.add(delivery.tenantId);
      taken.add(delivery.tenantId);
      this.#queue.push(delivery);
    }
    if (!plan.newcomers) {
      for (const [tenantId, held] of heldBefore) if (held >= cap) this.#atCap.add(tenantId);
      for (const [tenantId, count] of taken.entries())
        if ((heldBefore.get(tenantId) ?? 0) + count >= cap) this.#atCap.add(tenantId);
      for (const { tenantId } of excess) this.#atCap.add(tenantId);
    }
    if (excess.length > 0) this.#options.giveBack(excess);
    if (dropped.length > 0) this.#options.giveBack(dropped);
    this.#startQueued();
    // Those whose attempts ended while the claim was on its way.
    for (const tenantId of this.#atCap) this.#claimAgainIfFreed(tenantId);
  }

  /** Starts nothing more from now on (the worker is stopping); attempts in flight go on. */
  halt(): void {
    this.#halted = true;
  }

  /**
   * Forgets the queued deliveries (their claims stay leased: the worker gives them back) and resolves once
   * every attempt in flight has ended. For a halted scheduler, once no claim can be accepted any more.
   */
  async drain(): Promise<void> {
    for (const delivery of this.#queue.splice(0)) this.#release(delivery);
    this.#atCap.clear();
    await Promise.all(this.#inFlight);
    await this.#lookUp;
  }

  /**
   * How many more deliveries there is room to claim: the free slots and the prefetch (and `extra`), less
   * what is queued and what claims on their way may bring.
   */
  #room(extra = 0): number {
    return Math.min(
      this.#slotRoom() + extra,
      // Outcomes waiting to be recorded are backpressure: no new claims while the database lags behind.
      this.#options.config.concurrency * MAX_UNRECORDED_PER_SLOT - this.#options.unrecorded(),
    );
  }

  /** The room in the slots and the queue alone. */
  #slotRoom(): number {
    const taken = this.#inFlight.size + this.#queue.length + this.#reserved;
    return this.#options.config.concurrency + this.#prefetch - taken;
  }

  /** Gives back the queued deliveries `drop` picks (of active webhooks: the others are cancellations). */
  #dropQueued(drop: (delivery: ClaimedDelivery) => boolean): void {
    const dropped: ClaimedDelivery[] = [];
    const kept: ClaimedDelivery[] = [];
    for (const delivery of this.#queue)
      (delivery.webhookActive && drop(delivery) ? dropped : kept).push(delivery);
    if (dropped.length === 0) return;
    this.#queue = kept;
    for (const delivery of dropped) this.#release(delivery);
    this.#options.giveBack(dropped);
    // Room to claim again.
    this.#options.wake();
  }

  /**
   * Whether the webhook of a queued delivery was read active (at its claim: the claim's lease is
   * `leaseMs` from a time taken before its statement; or by a look-up) more than STATUS_RECHECK_MS ago.
   */
  #readTooLongAgo(delivery: ClaimedDelivery, lockedUntilMs: number, nowMs: number): boolean {
    if (nowMs - (lockedUntilMs - this.#options.config.leaseMs) <= STATUS_RECHECK_MS) return false;
    const foundAt = this.#foundActiveAt.get(delivery.webhookId);
    return foundAt === undefined || nowMs - foundAt > STATUS_RECHECK_MS;
  }

  /**
   * Looks up the webhooks of queued deliveries read active too long ago (see STATUS_RECHECK_MS), one
   * statement for all of them, one look-up at a time: those deleted or disabled are retired (their queued
   * deliveries dropped), the others are fresh again. If the look-up fails, the deliveries that waited for
   * it are given back: claimed again, their webhook is read afresh.
   */
  #lookUpWebhooks(): void {
    if (this.#lookUp !== undefined || this.#toLookUp.size === 0) return;
    const webhookIds = [...this.#toLookUp];
    this.#toLookUp.clear();
    const { clock } = this.#options;
    const atMs = clock.now().getTime();
    this.#lookUp = this.#options
      .inactiveWebhooks(webhookIds)
      .then(
        (inactive) => {
          for (const [webhookId, foundAt] of this.#foundActiveAt)
            if (atMs - foundAt > STATUS_RECHECK_MS) this.#foundActiveAt.delete(webhookId);
          for (const webhookId of webhookIds)
            if (!inactive.has(webhookId)) this.#foundActiveAt.set(webhookId, atMs);
          if (inactive.size > 0) this.retire([...inactive]);
        },
        () => {
          const looked = new Set(webhookIds);
          const nowMs = clock.now().getTime();
          this.#dropQueued(
            (delivery) =>
              looked.has(delivery.webhookId) &&
              this.#readTooLongAgo(delivery, Date.parse(delivery.lockedUntil), nowMs),
          );
        },
      )
      .finally(() => {
        this.#lookUp = undefined;
        this.#startQueued();
      });
  }

  /** The worker no longer holds `delivery` (its attempt ended, or it was left to its lease). */
  #release({ tenantId }: ClaimedDelivery): void {
    this.#held.remove(tenantId);
    this.#claimAgainIfFreed(tenantId);
  }

  /**
   * A tenant that reached its cap may have due deliveries that only its own attempts hold back, with slots
   * free: the loop claims again once a quarter of its cap is free.
   */
  #claimAgainIfFreed(tenantId: string): void {
    const cap = this.#heldCap();
    if (this.#atCap.has(tenantId) && this.#held.get(tenantId) <= cap - Math.max(1, cap >> 2)) {
      this.#atCap.delete(tenantId);
      this.#options.wake();
    }
  }

  /**
   * The most attempts one tenant may have in flight now: an equal share among the tenants this worker
   * holds deliveries for, with one more counted (see tenantShare), at most WEBHOOK_TENANT_CONCURRENCY.
   */
  #share(): number {
    const { concurrency, tenantConcurrency } = this.#options.config;
    return tenantShare({
      slots: concurrency,
      maxPerTenant: tenantConcurrency,
      activeTenants: this.#held.size,
    });
  }

  /**
   * The most deliveries the worker holds for one tenant: its share of attempts in flight, and as many
   * queued when the worker prefetches (a tenant's queued ones wait for its own attempts, never for a slot
   * another tenant could use).
   */
  #heldCap(): number {
    return this.#share() * (this.#prefetch > 0 ? 2 : 1);
  }

  /**
   * A webhook that answered may have deliveries parked that this scheduler does not know of: parked by it
   * before a restart, or by another instance. Looked at once per PARKED_LOOK_INTERVAL_MS per webhook (an
   * index probe when there are none): found, they are due now.
   */
  #lookForParked(webhookId: string): void {
    const now = this.#options.clock.now().getTime();
    const last = this.#lookedAt.get(webhookId);
    if (last !== undefined && now - last < PARKED_LOOK_INTERVAL_MS) return;
    if (this.#lookedAt.size >= MAX_PARKED_ENDPOINTS) this.#lookedAt.clear();
    this.#lookedAt.set(webhookId, now);
    this.#options.resume([webhookId]);
  }

  /**
   * Starts queued deliveries while slots are free (none once halted), in the queue's order, passing over
   * those of a tenant with its share of attempts in flight (a claim and a fan-out side by side may both
   * have given it its share, and shares shrink as tenants arrive: the rest waits for its own attempts, not
   * beside them), those of a tenant with an attempt in flight when only the reserved slots are free, and
   * those whose endpoint is throttled (they wait) or cut off (they are given back, due when its circuit
   * half-opens). One whose webhook was read active too long ago waits for it to be looked up again (see
   * STATUS_RECHECK_MS).
   */
  #startQueued(): void {
    const { config, clock } = this.#options;
    if (this.#halted) return;
    const waiting: ClaimedDelivery[] = [];
    const deferred = new Map<string, { untilMs: number; parked: boolean; deliveries: ClaimedDelivery[] }>();
    const share = this.#share();
    const nowMs = clock.now().getTime();
    let next = 0;
    for (; next < this.#queue.length && this.#inFlight.size < config.concurrency; next++) {
      const delivery = this.#queue[next] as ClaimedDelivery;
      const tenantInFlight = this.#inFlightByTenant.get(delivery.tenantId);
      const lockedUntilMs = Date.parse(delivery.lockedUntil);
      // Never attempt on a lease that could expire during the attempt: another worker may take it over.
      // Left leased, it is claimed again once the lease expires (slots stuck far longer than a timeout).
      if (this.#prefetch > 0 && lockedUntilMs - nowMs < config.timeoutMs) {
        this.#release(delivery);
        continue;
      }
      if (
        tenantInFlight >= share ||
        (tenantInFlight > 0 && this.#inFlight.size >= config.concurrency - this.#reservedSlots)
      ) {
        waiting.push(delivery);
        continue;
      }
      if (delivery.webhookActive && this.#readTooLongAgo(delivery, lockedUntilMs, nowMs)) {
        this.#toLookUp.add(delivery.webhookId);
        waiting.push(delivery);
        continue;
      }
      const endpoint = delivery.webhookActive ? endpointOf(delivery.tenantId, delivery.url) : undefined;
      const admission =
        endpoint === undefined ? { kind: 'start' as const } : this.#throttle.admit(endpoint, nowMs);
      if (admission.kind === 'start') this.#launch(delivery);
      else if (admission.kind === 'wait') waiting.push(delivery);
      else {
        const key = `${admission.untilMs} ${admission.parked}`;
        const same = deferred.get(key) ?? { ...admission, deliveries: [] };
        same.deliveries.push(delivery);
        deferred.set(key, same);
        if (admission.parked && endpoint !== undefined) {
          const webhooks = this.#parked.get(endpoint) ?? new Set<string>();
          webhooks.add(delivery.webhookId);
          this.#parked.set(endpoint, webhooks);
          // Bounded: an endpoint forgotten here has its deliveries due again when their parking ends.
          if (this.#parked.size > MAX_PARKED_ENDPOINTS)
            this.#parked.delete(this.#parked.keys().next().value as string);
        }
      }
    }
    if (next > 0) this.#queue = waiting.concat(this.#queue.slice(next));
    for (const { untilMs, parked, deliveries } of deferred.values()) {
      for (const delivery of deliveries) this.#release(delivery);
      this.#options.defer(deliveries, untilMs, parked);
    }
    this.#lookUpWebhooks();
  }

  /** Starts the attempt of `delivery`; when it ends, its slot starts the next and may wake the loop. */
  #launch(delivery: ClaimedDelivery): void {
    const { clock } = this.#options;
    this.#inFlightByTenant.add(delivery.tenantId);
    const endpoint = delivery.webhookActive ? endpointOf(delivery.tenantId, delivery.url) : undefined;
    if (endpoint !== undefined) this.#throttle.started(endpoint, clock.now().getTime());
    let outcome: EndpointOutcome = 'neutral';
    const attempt = this.#options
      .attempt(delivery)
      .then((result) => {
        outcome = result;
      })
      .finally(() => {
        if (
          endpoint !== undefined &&
          this.#throttle.ended(endpoint, outcome, clock.now().getTime(), this.#share())
        ) {
          // It answered after being cut off: what was parked for it is due now.
          const parked = this.#parked.get(endpoint);
          this.#parked.delete(endpoint);
          if (parked !== undefined) this.#options.resume([...parked]);
        } else if (outcome === 'answered') this.#lookForParked(delivery.webhookId);
        this.#inFlight.delete(attempt);
        this.#inFlightByTenant.remove(delivery.tenantId);
        this.#release(delivery);
        this.#startQueued();
        // Claim again once a quarter of the room is free: fewer, larger claims.
        const { concurrency } = this.#options.config;
        if (this.waitingForSlots && this.#slotRoom() >= Math.max(1, (concurrency + this.#prefetch) >> 2))
          this.#options.wake();
      });
    this.#inFlight.add(attempt);
  }
}
