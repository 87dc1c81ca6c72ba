import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Agent } from 'undici';
import type { Clock } from '../../common/clock.js';
import type { OutboxSignal } from '../../events/event-outbox.js';
import type { Metrics } from '../../metrics/metrics.js';
import { describeError, type Logger } from '../../request-logging/logger.js';
import { GroupCommitter } from '../../storage/group-committer.js';
import type { Storage } from '../../storage/storage.js';
import type { BackgroundPacer } from '../../workers/background-pacer.js';
import type { BackgroundWorker } from '../../workers/background-worker.js';
import type { SecretBox } from '../outbound/secret-box.js';
import type { WebhookConfig } from '../webhook-config.js';
import { batchByBatch, inactiveWebhooks, type RetiredWebhookSignal } from '../webhook-registry.js';
import { attemptDelivery, cancellation } from './delivery-attempt.js';
import {
  type ClaimedDelivery,
  claimDueDeliveries,
  deferClaims,
  releaseClaims,
  resumeParked,
  withSigningSecrets,
} from './delivery-claims.js';
import type { DeliveryWrite } from './delivery-recorder.js';
import { DeliveryScheduler } from './delivery-scheduler.js';
import { createDeliveryAgent, createDeliverySender, type DeliverySender } from './delivery-sender.js';
import type { EndpointOutcome } from './endpoint-throttle.js';
import { dispatchEvents } from './event-dispatcher.js';
import { recordIsolated } from './isolated-recorder.js';
import { reserveRateSlots } from './rate-cap.js';

/**
 * Outcomes are recorded at most once per this many ms (one transaction, one disk flush each): the slot
 * of an attempt is free as soon as the attempt ends, so the wait delays no delivery, only its listing.
 */
const RECORD_LINGER_MS = 10;

/** How far ahead a capped webhook's attempt slots are reserved (the rest go back, due at their slot). */
const RATE_HORIZON_MS = 1_000;

/** What a delivery worker is built from. */
export interface DeliveryWorkerOptions {
  storage: Storage;
  /** Wakes the worker when this instance commits events (or queues a manual attempt). */
  outbox: Pick<OutboxSignal, 'subscribe'>;
  /**
   * This instance's deletions and disablings of webhooks: the worker drops at once the deliveries of them it
   * claimed and has not started, and tells it of those its recorder disables (so this instance's other
   * workers drop theirs). Without it, the worker drops only those its own recorder disables, and any other
   * within STATUS_RECHECK_MS (see DeliveryScheduler), as for another instance's.
   */
  retired?: Pick<RetiredWebhookSignal, 'subscribe' | 'notify'>;
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
  /**
   * Each fan-out transaction runs through it, as a run's batch commits do (RunWorker), giving way to
   * requests clients wait on (none: at once). On SQLite the fan-out holds the one connection every
   * tenant's scoring needs; paced, a backlog of events to many webhooks is a train of short transactions
   * with pauses between them, not a queue of long ones back to back.
   */
  pacer?: Pick<BackgroundPacer, 'run'>;
}

/**
 * Delivers webhooks: the loop around a DeliveryScheduler. Fans out committed events to deliveries, claims
 * due deliveries with a lease as the scheduler plans, makes the attempts it starts (up to `concurrency` at
 * once), and records their outcomes in batches (one transaction for every outcome that ended meanwhile).
 * Wakes at once when this process commits events, and otherwise polls every `pollIntervalMs`; on stop,
 * lets the attempts in flight end, records them and gives back every claim left.
 */
export class DeliveryWorker implements BackgroundWorker {
  readonly name = 'webhook-delivery';
  /** Names this worker's claims (`locked_by`): unique per instance. */
  readonly workerId: string;
  readonly #options: DeliveryWorkerOptions;
  readonly #send: DeliverySender;
  readonly #agent: Agent;
  readonly #recorder: GroupCommitter<DeliveryWrite>;
  /** What is claimed, for whom, and when each claimed delivery starts. */
  readonly #scheduler: DeliveryScheduler;
  #running = false;
  #claimsHealthy = true;
  #dispatchHealthy = true;
  /** The fan-out under way, if any (one at a time). */
  #fanOut: Promise<void> | undefined;
  #loop: Promise<void> | undefined;
  #unsubscribe: (() => void) | undefined;
  #unsubscribeRetired: (() => void) | undefined;
  #wake: (() => void) | undefined;
  /** Events may wait for their fan-out: on start, a commit here, a fan-out that left some, or a poll. */
  #dispatchDue = true;
  /** The tenant the last fan-out served last: the next one starts after it (see dispatchEvents). */
  #fanOutAfter: string | undefined;
  /** Something woke the loop while it was busy: it looks again before sleeping. */
  #signalled = false;
  /** The start time (Unix ms) reserved for a claimed delivery to a capped webhook, by delivery id. */
  readonly #slots = new Map<string, number>();
  /** The attempts waiting for their reserved start time: their webhook, by delivery id. */
  readonly #waitingForSlot = new Map<string, string>();
  /** Those of them whose webhook was retired while they waited: given back instead of attempted. */
  readonly #withdrawn = new Set<string>();

  constructor(options: DeliveryWorkerOptions) {
    this.#options = options;
    this.workerId = `${hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`;
    this.#scheduler = new DeliveryScheduler({
      config: options.config,
      clock: options.clock,
      attempt: (delivery) => this.#attempt(delivery),
      giveBack: (deliveries) => this.#giveBack(deliveries),
      defer: (deliveries, untilMs, parked) => this.#defer(deliveries, untilMs, parked),
      resume: (webhookIds) => this.#resume(webhookIds),
      wake: () => this.#signal(),
      unrecorded: () => this.#recorder.queued,
      inactiveWebhooks: (webhookIds) =>
        inactiveWebhooks(options.storage.db, webhookIds).catch((error: unknown) => {
          options.logger.error(
            'could not look up whether webhooks are still active; their queued deliveries are given back',
            { count: webhookIds.length, error: describeError(error) },
          );
          throw error;
        }),
    });
    this.#agent = createDeliveryAgent(options.config.timeoutMs, options.connect);
    this.#send = createDeliverySender({ timeoutMs: options.config.timeoutMs, dispatcher: this.#agent });
    // Isolated: one outcome that cannot be stored never fails the others of its batch.
    this.#recorder = new GroupCommitter(
      (writes) =>
        recordIsolated(
          options.storage,
          writes,
          {
            workerId: this.workerId,
            now: options.clock.now(),
            disableAfterFailingMs: options.config.disableAfterFailingMs,
            onDisabled: (webhookIds) =>
              options.retired ? options.retired.notify(webhookIds) : this.#retire(webhookIds),
            logger: options.logger,
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
    this.#unsubscribeRetired = this.#options.retired?.subscribe((webhookIds) => this.#retire(webhookIds));
    this.#loop = this.#run();
  }

  /**
   * Stops claiming, lets attempts in flight finish and records them, gives back any claim left (those
   * still queued included), resolves.
   */
  async stop(): Promise<void> {
    if (!this.#running) return;
    this.#running = false;
    this.#scheduler.halt();
    this.#unsubscribe?.();
    this.#unsubscribeRetired?.();
    this.#signal();
    await this.#loop;
    await this.#scheduler.drain();
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
   * The loop: start a fan-out of events when this process committed some, after one that left some, or
   * once per poll interval; claim as many due deliveries as the scheduler has room for; then sleep until
   * room frees up, events are committed, a fan-out ends, or the poll interval passes.
   * A fan-out runs beside the claims, not before them: it is a transaction of several statements (up to
   * 500 events and 1,000 deliveries inserted), which the slots would otherwise wait through.
   */
  async #run(): Promise<void> {
    const { config, storage, clock, secretBox, logger } = this.#options;
    while (this.#running) {
      let atCapacity = false;
      this.#signalled = false;
      this.#startFanOut();
      const plan = this.#scheduler.planClaim();
      if (plan !== undefined) {
        try {
          const claimed = await claimDueDeliveries(storage, secretBox, {
            workerId: this.workerId,
            now: clock.now(),
            leaseMs: config.leaseMs,
            limit: plan.limit,
            tenantCap: plan.tenantCap,
            held: plan.held,
          });
          this.#scheduler.accept(await this.#underRateCaps(claimed), plan);
          atCapacity = plan.newcomers || claimed.length === plan.limit;
          this.#claimsHealthy = true;
        } catch (error) {
          this.#claimsHealthy = false;
          logger.error('webhook delivery loop failed; retrying after the poll interval', {
            error: describeError(error),
          });
        } finally {
          this.#scheduler.settle(plan);
        }
      } else atCapacity = true;
      if (!this.#running) break;
      this.#scheduler.waitingForSlots = atCapacity;
      if (await this.#sleep(config.pollIntervalMs)) this.#dispatchDue = true;
      this.#scheduler.waitingForSlots = false;
    }
    // Its claims join the queue, which stop() then gives back; no other starts (#running is false).
    await this.#fanOut;
  }

  /**
   * Starts a fan-out if one is due and none is under way; the next starts as soon as it ends if more are
   * due (events it left, or events committed meanwhile), through the pacer if there is one. Called on every
   * commit, not only from the loop: a commit's deliveries do not wait for a claim under way to end.
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
   * Fans out a transaction's worth of events (see dispatchEvents), through the pacer if there is one,
   * claiming from the new deliveries what the scheduler's fan-out plan allows (saving a round of claims;
   * the loop's claims take the rest).
   */
  async #dispatch(): Promise<void> {
    const { config, storage, clock, secretBox, logger, pacer } = this.#options;
    const plan = this.#scheduler.planFanOut();
    try {
      // The time and the lease as of the transaction, not of the wait for the pacer's turn.
      const step = () => {
        const now = clock.now();
        const lockedUntil = new Date(now.getTime() + config.leaseMs).toISOString();
        return dispatchEvents(storage, now, {
          ...(this.#fanOutAfter !== undefined && { after: this.#fanOutAfter }),
          claim: {
            workerId: this.workerId,
            lockedUntil,
            max: plan.limit,
            tenantCap: plan.tenantCap,
            held: plan.held,
          },
          maxPerEvent: config.maxDeliveriesPerEvent,
        });
      };
      const fanOut = await (pacer ? pacer.run(step) : step());
      if (fanOut.after !== undefined) this.#fanOutAfter = fanOut.after;
      // Events left for the next fan-out; a commit meanwhile has set the flag again by itself.
      if (fanOut.more) this.#dispatchDue = true;
      const claimed = await withSigningSecrets(storage, secretBox, fanOut.claimed, clock.now());
      this.#scheduler.accept(await this.#underRateCaps(claimed), plan);
      this.#dispatchHealthy = true;
    } catch (error) {
      this.#dispatchHealthy = false;
      logger.error('webhook event fan-out failed; retrying after the poll interval', {
        error: describeError(error),
      });
    } finally {
      this.#scheduler.settle(plan);
    }
  }

  /**
   * The claimed deliveries that may start within the rate horizon (see reserveRateSlots), their slots
   * noted for #attempt to wait for; the others are given back due at their webhook's next free slot.
   */
  async #underRateCaps(claimed: ClaimedDelivery[]): Promise<ClaimedDelivery[]> {
    if (claimed.length === 0) return claimed;
    const { storage, clock, config } = this.#options;
    const nowMs = clock.now().getTime();
    const horizonMs = Math.min(RATE_HORIZON_MS, config.leaseMs / 2);
    const admission = await reserveRateSlots(storage, claimed, nowMs, horizonMs);
    const byId = new Map(claimed.map((delivery) => [delivery.id, delivery]));
    for (const [atMs, ids] of admission.later)
      this.#defer(
        ids.map((id) => byId.get(id) as ClaimedDelivery),
        atMs,
      );
    for (const { delivery, atMs } of admission.start) if (atMs > nowMs) this.#slots.set(delivery.id, atMs);
    return admission.start.map(({ delivery }) => delivery);
  }

  /**
   * These webhooks were deleted or disabled (committed): the deliveries of them claimed and not started
   * are dropped, those queued and those waiting for their rate slot (see DeliveryScheduler.retire).
   */
  #retire(webhookIds: readonly string[]): void {
    this.#scheduler.retire(webhookIds);
    if (this.#waitingForSlot.size === 0) return;
    const retired = new Set(webhookIds);
    for (const [deliveryId, webhookId] of this.#waitingForSlot)
      if (retired.has(webhookId)) this.#withdrawn.add(deliveryId);
  }

  /** Gives claims back at once (if that fails, their leases expire and they are claimed again then). */
  #giveBack(deliveries: readonly ClaimedDelivery[]): void {
    const { storage, logger } = this.#options;
    const ids = deliveries.map((delivery) => delivery.id);
    for (const id of ids) this.#slots.delete(id);
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

  /** Gives claims back due at `untilMs`, with no attempt (their endpoint's circuit is open). */
  #defer(deliveries: readonly ClaimedDelivery[], untilMs: number, parked = false): void {
    const { storage, logger } = this.#options;
    const ids = deliveries.map((delivery) => delivery.id);
    deferClaims(storage, this.workerId, ids, new Date(untilMs).toISOString(), parked).catch(
      (error: unknown) => {
        logger.error(
          'could not put off webhook deliveries to an endpoint cut off; they are claimed again when their lease expires',
          { count: ids.length, error: describeError(error) },
        );
      },
    );
  }

  /**
   * Makes the parked deliveries of the webhooks due now (their endpoint answered a probe), a short
   * statement per batch, then wakes the loop. If that fails, they are due when their parking ends.
   */
  #resume(webhookIds: readonly string[]): void {
    const { storage, logger, clock } = this.#options;
    const resume = async () => {
      for (const webhookId of webhookIds)
        await batchByBatch((after) => resumeParked(storage, webhookId, clock.now().toISOString(), after));
      this.#signal();
    };
    resume().catch((error: unknown) => {
      logger.error('could not resume the parked deliveries of an endpoint that answered again', {
        count: webhookIds.length,
        error: describeError(error),
      });
    });
  }

  /** Makes the attempt (or the cancellation) and queues its write; returns what it says of the endpoint. */
  async #attempt(delivery: ClaimedDelivery): Promise<EndpointOutcome> {
    const { clock, config, logger, metrics } = this.#options;
    const slot = this.#slots.get(delivery.id);
    if (slot !== undefined) {
      this.#slots.delete(delivery.id);
      this.#waitingForSlot.set(delivery.id, delivery.webhookId);
      // A timer may fire a millisecond early: never start before the slot.
      for (let waitMs = slot - clock.now().getTime(); waitMs > 0; waitMs = slot - clock.now().getTime())
        await new Promise((resolve) => setTimeout(resolve, waitMs));
      this.#waitingForSlot.delete(delivery.id);
      // Its webhook was deleted or disabled meanwhile: no attempt (the database cancelled the delivery).
      if (this.#withdrawn.delete(delivery.id)) {
        this.#giveBack([delivery]);
        return 'neutral';
      }
    }
    const { write, outcome } = delivery.webhookActive
      ? await attemptDelivery(delivery, { send: this.#send, clock, config, metrics })
      : { write: cancellation(delivery), outcome: 'neutral' as const };
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
