import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Agent } from 'undici';
import type { Clock } from '../../common/clock.js';
import type { OutboxSignal } from '../../events/event-outbox.js';
import type { Metrics } from '../../metrics/metrics.js';
import { describeError, type Logger } from '../../request-logging/logger.js';
import { GroupCommitter } from '../../storage/group-committer.js';
import type { Storage } from '../../storage/storage.js';
import type { BackgroundWorker } from '../../workers/background-worker.js';
import { reservedSlots, tenantShare } from '../../workers/fair-share.js';
import type { SecretBox } from '../outbound/secret-box.js';
import type { WebhookConfig } from '../webhook-config.js';
import {
  type ClaimedDelivery,
  claimDueDeliveries,
  deferClaims,
  releaseClaims,
  withSigningSecrets,
} from './delivery-claims.js';
import { nextDeliveryState } from './delivery-outcome.js';
import type { DeliveryWrite } from './delivery-recorder.js';
import { createDeliveryAgent, createDeliverySender, type DeliverySender } from './delivery-sender.js';
import { type EndpointOutcome, EndpointThrottle, endpointOf, endpointOutcome } from './endpoint-throttle.js';
import { DISPATCH_BATCH, dispatchEvents } from './event-dispatcher.js';
import { recordIsolated } from './isolated-recorder.js';
import { judgeAttempt } from './retry-schedule.js';

/** Outcomes per slot that may wait for their write before the worker stops claiming. */
const MAX_UNRECORDED_PER_SLOT = 4;

/**
 * The worker claims up to its concurrency more than it has free slots, and keeps those in a queue that
 * starts them as slots free up: fewer, larger claims (each costs a statement or three, and the details and
 * secrets of its deliveries), and no slot idles while a claim is on its way: the next claim starts once a
 * quarter of the room is free, while the queue still holds up to a quarter of it, enough to keep every
 * slot busy during the round trips of a claim (on PostgreSQL, under load, 5-10 ms; with half the
 * concurrency, the queue was nearly empty by then and slots idled waiting for it). Only when the lease is
 * at least this many attempt timeouts long: the queue never holds more than the concurrency, so a queued
 * delivery waits for one attempt to end at most (each slot frees once within a timeout), and its lease
 * still has at least two attempt timeouts left when it starts.
 */
const PREFETCH_MIN_LEASE_TIMEOUTS = 3;

/**
 * Outcomes are recorded at most once per this many ms (one transaction, one disk flush each): the slot
 * of an attempt is free as soon as the attempt ends, so the wait delays no delivery, only its listing.
 */
const RECORD_LINGER_MS = 10;

const NO_SECRET_ERROR = 'no signing secret could be opened (was SECRETS_KEY changed?)';

/** What a delivery worker is built from. */
export interface DeliveryWorkerOptions {
  storage: Storage;
  /** Wakes the worker when this instance commits events (or queues a manual attempt). */
  outbox: Pick<OutboxSignal, 'subscribe'>;
  config: WebhookConfig;
  secretBox: SecretBox;
  logger: Logger;
  clock: Clock;
  /** Counts attempts by result and observes the delivery lag. */
  metrics?: Pick<Metrics, 'deliveryAttempts' | 'deliveryLagSeconds'>;
  /**
   * How the worker's Agent (closed on stop) connects: the checked connector in production
   * (`checkedConnector`), so every address is checked at connect time and the socket pinned to it.
   */
  connect?: Agent.Options['connect'];
}

/**
 * Delivers webhooks: fans out committed events to deliveries, claims due deliveries with a lease, makes up
 * to `concurrency` signed attempts at once, and records their outcomes in batches (one transaction for
 * every outcome that ended meanwhile). Wakes at once when this process commits events, and otherwise
 * polls every `pollIntervalMs`.
 */
export class DeliveryWorker implements BackgroundWorker {
  readonly name = 'webhook-delivery';
  /** Names this worker's claims (`locked_by`): unique per instance. */
  readonly workerId: string;
  readonly #options: DeliveryWorkerOptions;
  readonly #send: DeliverySender;
  readonly #agent: Agent;
  readonly #recorder: GroupCommitter<DeliveryWrite>;
  readonly #inFlight = new Set<Promise<void>>();
  /** Claimed deliveries waiting for a slot, in the order they were claimed (see claimDueDeliveries). */
  #queue: ClaimedDelivery[] = [];
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
  #running = false;
  #claimsHealthy = true;
  #dispatchHealthy = true;
  /** The fan-out under way, if any (one at a time). */
  #fanOut: Promise<void> | undefined;
  /** Deliveries the claims and the fan-out under way may bring: counted as taken room. */
  #reserved = 0;
  #loop: Promise<void> | undefined;
  #unsubscribe: (() => void) | undefined;
  #wake: (() => void) | undefined;
  #waitingForSlots = false;
  /** Events may wait for their fan-out: on start, after a commit here, a full batch, or a poll interval. */
  #dispatchDue = true;
  /** Something woke the loop while it was busy: it looks again before sleeping. */
  #signalled = false;

  constructor(options: DeliveryWorkerOptions) {
    this.#options = options;
    this.workerId = `${hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`;
    const { concurrency, leaseMs, timeoutMs } = options.config;
    this.#prefetch = leaseMs >= PREFETCH_MIN_LEASE_TIMEOUTS * timeoutMs ? concurrency : 0;
    this.#reservedSlots = reservedSlots(concurrency);
    this.#throttle = new EndpointThrottle({
      threshold: options.config.breakerThreshold,
      cooldownMs: options.config.breakerCooldownMs,
    });
    this.#agent = createDeliveryAgent(options.config.timeoutMs, options.connect);
    this.#send = createDeliverySender({ timeoutMs: options.config.timeoutMs, dispatcher: this.#agent });
    // Isolated: one outcome that cannot be stored never fails the others of its batch (defect #1).
    this.#recorder = new GroupCommitter(
      (writes) =>
        recordIsolated(
          options.storage,
          writes,
          {
            workerId: this.workerId,
            now: options.clock.now(),
            disableAfterFailingMs: options.config.disableAfterFailingMs,
          },
          options.logger,
        ),
      undefined,
      { lingerMs: RECORD_LINGER_MS },
    );
  }

  get running(): boolean {
    return this.#running && this.#claimsHealthy && this.#dispatchHealthy;
  }

  start(): void {
    if (this.#loop) return;
    this.#running = true;
    this.#unsubscribe = this.#options.outbox.subscribe(() => {
      this.#dispatchDue = true;
      this.#startFanOut();
      this.#signal();
    });
    this.#loop = this.#run();
  }

  /**
   * Stops claiming, lets attempts in flight finish and records them, gives back any claim left (those
   * still queued included), resolves.
   */
  async stop(): Promise<void> {
    if (!this.#running) return;
    this.#running = false;
    this.#unsubscribe?.();
    this.#signal();
    await this.#loop;
    for (const delivery of this.#queue.splice(0)) this.#release(delivery);
    this.#atCap.clear();
    await Promise.all(this.#inFlight);
    await this.#recorder.close();
    try {
      await releaseClaims(this.#options.storage, this.workerId);
    } catch (error) {
      this.#options.logger.error('could not release webhook delivery claims', {
        error: describeError(error),
      });
    }
    await this.#agent.close();
  }

  /**
   * The loop: start a fan-out of events when this process committed some, after a full batch, or once per
   * poll interval; claim as many due deliveries as there is room for (the free slots and the prefetch);
   * then sleep until room frees up, events are committed, a fan-out ends, or the poll interval passes.
   * A fan-out runs beside the claims, not before them: it is a transaction of six statements (500 events,
   * their deliveries inserted), 20-40 ms on PostgreSQL under load, which the slots used to wait through.
   */
  async #run(): Promise<void> {
    const { config, storage, clock, secretBox, logger } = this.#options;
    while (this.#running) {
      let atCapacity = false;
      this.#signalled = false;
      this.#startFanOut();
      const room = this.#room();
      // With no room, tenants holding nothing may still take the reserved slots: one delivery each.
      const newcomers = room <= 0;
      const free = newcomers ? this.#room(this.#reservedSlots) : room;
      if (free > 0) {
        this.#reserved += free;
        const heldBefore = this.#held.snapshot();
        const cap = newcomers ? 1 : this.#heldCap();
        try {
          const claimed = await claimDueDeliveries(storage, secretBox, {
            workerId: this.workerId,
            now: clock.now(),
            leaseMs: config.leaseMs,
            limit: free,
            tenantCap: cap,
            held: heldBefore,
          });
          this.#enqueue(claimed, heldBefore, cap, newcomers);
          atCapacity = newcomers || claimed.length === free;
          this.#claimsHealthy = true;
        } catch (error) {
          this.#claimsHealthy = false;
          logger.error('webhook delivery loop failed; retrying after the poll interval', {
            error: describeError(error),
          });
        } finally {
          this.#reserved -= free;
        }
      } else atCapacity = true;
      if (!this.#running) break;
      this.#waitingForSlots = atCapacity;
      if (await this.#sleep(config.pollIntervalMs)) this.#dispatchDue = true;
      this.#waitingForSlots = false;
    }
    // Its claims join the queue, which stop() then gives back; no other starts (#running is false).
    await this.#fanOut;
  }

  /**
   * Starts a fan-out if one is due and none is under way; the next starts as soon as it ends if more are
   * due (a full batch, or events committed meanwhile). Called on every commit, not only from the loop: a
   * commit's deliveries do not wait for a claim under way to end.
   */
  #startFanOut(): void {
    if (!this.#running || !this.#dispatchDue || this.#fanOut !== undefined) return;
    this.#dispatchDue = false;
    this.#fanOut = this.#dispatch().finally(() => {
      this.#fanOut = undefined;
      this.#startFanOut();
      this.#signal();
    });
  }

  /**
   * How many more deliveries there is room to claim: the free slots and the prefetch (and `extra`), less
   * what is queued and what claims on their way may bring.
   */
  #room(extra = 0): number {
    return Math.min(
      this.#slotRoom() + extra,
      // Outcomes waiting to be recorded are backpressure: no new claims while the database lags behind.
      this.#options.config.concurrency * MAX_UNRECORDED_PER_SLOT - this.#recorder.queued,
    );
  }

  /** The room in the slots and the queue alone. */
  #slotRoom(): number {
    const taken = this.#inFlight.size + this.#queue.length + this.#reserved;
    return this.#options.config.concurrency + this.#prefetch - taken;
  }

  /**
   * Fans out up to a batch of events, taking up to half the room for the worker from the new deliveries
   * (saving a round of claims; the loop's claims take the rest).
   */
  async #dispatch(): Promise<void> {
    const { config, storage, clock, secretBox, logger } = this.#options;
    const max = Math.max(0, this.#room() >> 1);
    this.#reserved += max;
    const heldBefore = this.#held.snapshot();
    const heldCap = this.#heldCap();
    try {
      const now = clock.now();
      const lockedUntil = new Date(now.getTime() + config.leaseMs).toISOString();
      const fanOut = await dispatchEvents(storage, now, {
        claim: {
          workerId: this.workerId,
          lockedUntil,
          max,
          tenantCap: heldCap,
          held: heldBefore,
        },
        maxPerEvent: config.maxDeliveriesPerEvent,
      });
      // A full batch means more may wait; a commit meanwhile has set the flag again by itself.
      if (fanOut.dispatched === DISPATCH_BATCH) this.#dispatchDue = true;
      this.#enqueue(await withSigningSecrets(storage, secretBox, fanOut.claimed, now), heldBefore, heldCap);
      this.#dispatchHealthy = true;
    } catch (error) {
      this.#dispatchHealthy = false;
      logger.error('webhook event fan-out failed; retrying after the poll interval', {
        error: describeError(error),
      });
    } finally {
      this.#reserved -= max;
    }
  }

  /**
   * Queues what a claim or a fan-out took, given what the worker held when it asked and the cap the claim
   * was given. A tenant that got all its cap allowed may have more due, held back only by its own
   * attempts: it is marked, and the loop claims again once a quarter of its cap is free (see #release),
   * however few it holds by then. A claim for the reserved slots (`newcomers`, a cap of one) marks none.
   */
  #enqueue(
    claimed: readonly ClaimedDelivery[],
    heldBefore: ReadonlyMap<string, number>,
    cap: number,
    newcomers = false,
  ): void {
    const taken = new TenantCounts();
    const excess: ClaimedDelivery[] = [];
    for (const delivery of claimed) {
      // A claim and a fan-out side by side may both have given a tenant its share: the second goes back.
      if (this.#held.get(delivery.tenantId) >= cap) {
        excess.push(delivery);
        continue;
      }
      this.#held.add(delivery.tenantId);
      taken.add(delivery.tenantId);
      this.#queue.push(delivery);
    }
    if (!newcomers) {
      for (const [tenantId, held] of heldBefore) if (held >= cap) this.#atCap.add(tenantId);
      for (const [tenantId, count] of taken.entries())
        if ((heldBefore.get(tenantId) ?? 0) + count >= cap) this.#atCap.add(tenantId);
      for (const { tenantId } of excess) this.#atCap.add(tenantId);
    }
    if (excess.length > 0) this.#giveBack(excess);
    this.#startQueued();
    // Those whose attempts ended while the claim was on its way.
    for (const tenantId of this.#atCap) this.#claimAgainIfFreed(tenantId);
  }

  /** Gives claims back at once (if that fails, their leases expire and they are claimed again then). */
  #giveBack(deliveries: readonly ClaimedDelivery[]): void {
    const { storage, logger } = this.#options;
    const ids = deliveries.map((delivery) => delivery.id);
    releaseClaims(storage, this.workerId, ids).catch((error: unknown) => {
      logger.error(
        'could not give back webhook delivery claims; they are claimed again when their lease expires',
        {
          count: ids.length,
          error: describeError(error),
        },
      );
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
      this.#signal();
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
   * Starts queued deliveries while slots are free (none once stopping: stop() gives their claims back),
   * in the queue's order, passing over those of a tenant with its share of attempts in flight (a claim
   * and a fan-out side by side may both have given it its share, and shares shrink as tenants arrive: the
   * rest waits for its own attempts, not beside them), those of a tenant with an attempt in flight when
   * only the reserved slots are free, and those whose endpoint is throttled (they wait) or cut off (they
   * are given back, due when its circuit half-opens).
   */
  #startQueued(): void {
    const { config, clock } = this.#options;
    if (!this.#running) return;
    const waiting: ClaimedDelivery[] = [];
    const deferred = new Map<number, ClaimedDelivery[]>();
    const share = this.#share();
    const nowMs = clock.now().getTime();
    let next = 0;
    for (; next < this.#queue.length && this.#inFlight.size < config.concurrency; next++) {
      const delivery = this.#queue[next] as ClaimedDelivery;
      const tenantInFlight = this.#inFlightByTenant.get(delivery.tenantId);
      // Never attempt on a lease that could expire during the attempt: another worker may take it over.
      // Left leased, it is claimed again once the lease expires (slots stuck far longer than a timeout).
      if (this.#prefetch > 0 && Date.parse(delivery.lockedUntil) - nowMs < config.timeoutMs) {
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
      const admission = delivery.webhookActive
        ? this.#throttle.admit(endpointOf(delivery.tenantId, delivery.url), nowMs)
        : { kind: 'start' as const };
      if (admission.kind === 'start') this.#launch(delivery);
      else if (admission.kind === 'wait') waiting.push(delivery);
      else {
        const same = deferred.get(admission.untilMs) ?? [];
        same.push(delivery);
        deferred.set(admission.untilMs, same);
      }
    }
    if (next > 0) this.#queue = waiting.concat(this.#queue.slice(next));
    for (const [untilMs, deliveries] of deferred) this.#defer(deliveries, untilMs);
  }

  /** Gives claims back due at `untilMs`, with no attempt (their endpoint's circuit is open). */
  #defer(deliveries: readonly ClaimedDelivery[], untilMs: number): void {
    const { storage, logger } = this.#options;
    for (const delivery of deliveries) this.#release(delivery);
    const ids = deliveries.map((delivery) => delivery.id);
    deferClaims(storage, this.workerId, ids, new Date(untilMs).toISOString()).catch((error: unknown) => {
      logger.error(
        'could not put off webhook deliveries to an endpoint cut off; they are claimed again when their lease expires',
        { count: ids.length, error: describeError(error) },
      );
    });
  }

  #launch(delivery: ClaimedDelivery): void {
    const { clock } = this.#options;
    this.#inFlightByTenant.add(delivery.tenantId);
    const endpoint = delivery.webhookActive ? endpointOf(delivery.tenantId, delivery.url) : undefined;
    if (endpoint !== undefined) this.#throttle.started(endpoint, clock.now().getTime());
    let outcome: EndpointOutcome = 'neutral';
    const attempt = this.#attempt(delivery)
      .then((result) => {
        outcome = result;
      })
      .finally(() => {
        if (endpoint !== undefined)
          this.#throttle.ended(endpoint, outcome, clock.now().getTime(), this.#share());
        this.#inFlight.delete(attempt);
        this.#inFlightByTenant.remove(delivery.tenantId);
        this.#release(delivery);
        this.#startQueued();
        // Claim again once a quarter of the room is free: fewer, larger claims.
        const { concurrency } = this.#options.config;
        if (this.#waitingForSlots && this.#slotRoom() >= Math.max(1, (concurrency + this.#prefetch) >> 2))
          this.#signal();
      });
    this.#inFlight.add(attempt);
  }

  /** Makes the attempt (or the cancellation) and queues its write; returns what it says of the endpoint. */
  async #attempt(delivery: ClaimedDelivery): Promise<EndpointOutcome> {
    const { clock, config, logger } = this.#options;
    const claim = {
      deliveryId: delivery.id,
      webhookId: delivery.webhookId,
      lockedUntil: delivery.lockedUntil,
      tenantId: delivery.tenantId,
    };
    let write: DeliveryWrite;
    let outcome: EndpointOutcome = 'neutral';
    if (!delivery.webhookActive) {
      write = { kind: 'cancel', claim };
    } else {
      const attemptedAt = clock.now();
      this.#options.metrics?.deliveryLagSeconds.observe(
        Math.max(0, attemptedAt.getTime() - Date.parse(delivery.dueAt)) / 1000,
      );
      // Never send unsigned: with no secret to sign with, the attempt fails without a request.
      const sent =
        delivery.secrets.length === 0
          ? { statusCode: 0, error: NO_SECRET_ERROR, durationMs: 0, responseBody: null }
          : await this.#send({
              url: delivery.url,
              eventId: delivery.eventId,
              payload: delivery.payload,
              secrets: delivery.secrets,
              timestampSeconds: Math.floor(attemptedAt.getTime() / 1000),
            });
      const now = clock.now();
      const verdict = judgeAttempt(sent, now);
      const position = {
        failedScheduledAttempts: delivery.failedScheduledAttempts,
        trigger: delivery.trigger,
        succeededBefore: delivery.succeededBefore,
      };
      const next = nextDeliveryState(config, position, verdict, now, Math.random);
      this.#options.metrics?.deliveryAttempts.inc({ result: attemptResult(sent) });
      outcome = endpointOutcome(sent, delivery.secrets.length > 0);
      write = { kind: 'attempt', claim, trigger: delivery.trigger, attemptedAt, sent, verdict, next };
    }
    // The slot is free once the attempt is made; its outcome joins the next batch of writes.
    this.#recorder.add(write).catch((error: unknown) => {
      // The claim stays leased; when the lease expires the delivery is attempted again (at least once).
      logger.error('could not record a webhook delivery', {
        deliveryId: delivery.id,
        error: describeError(error),
      });
    });
    return outcome;
  }

  /**
   * Waits `ms`, or less when signalled; returns at once when a signal came since the loop last looked.
   * Resolves true when the whole interval passed (time to poll the outbox).
   */
  #sleep(ms: number): Promise<boolean> {
    if (this.#signalled) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#wake = undefined;
        resolve(true);
      }, ms);
      this.#wake = () => {
        clearTimeout(timer);
        this.#wake = undefined;
        resolve(false);
      };
    });
  }

  #signal(): void {
    if (this.#wake) this.#wake();
    else this.#signalled = true;
  }
}

/** Counts by tenant (deliveries held, attempts in flight); a tenant at zero is not kept. */
class TenantCounts {
  readonly #counts = new Map<string, number>();

  get(tenantId: string): number {
    return this.#counts.get(tenantId) ?? 0;
  }

  /** How many tenants have a count. */
  get size(): number {
    return this.#counts.size;
  }

  add(tenantId: string): void {
    this.#counts.set(tenantId, this.get(tenantId) + 1);
  }

  remove(tenantId: string): void {
    const count = this.get(tenantId) - 1;
    if (count > 0) this.#counts.set(tenantId, count);
    else this.#counts.delete(tenantId);
  }

  entries(): IterableIterator<[string, number]> {
    return this.#counts.entries();
  }

  /** The counts now, as a claim takes them (they change while it is on its way). */
  snapshot(): Map<string, number> {
    return new Map(this.#counts);
  }
}

/** The `result` label of an attempt: succeeded, failed (an HTTP answer other than 2xx), timeout or network_error. */
function attemptResult(sent: { statusCode: number; error: string | null }): string {
  if (sent.statusCode >= 200 && sent.statusCode < 300 && sent.error === null) return 'succeeded';
  if (sent.statusCode > 0) return 'failed';
  return sent.error === 'timeout' ? 'timeout' : 'network_error';
}
