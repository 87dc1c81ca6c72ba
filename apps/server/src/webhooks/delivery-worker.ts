import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Dispatcher } from 'undici';
import type { Clock } from '../clock.js';
import { describeError, type Logger } from '../logger.js';
import { GroupCommitter } from '../storage/group-committer.js';
import type { Storage } from '../storage/storage.js';
import type { BackgroundWorker } from '../workers/background-worker.js';
import { type ClaimedDelivery, claimDueDeliveries, releaseClaims } from './delivery-claims.js';
import { nextDeliveryState } from './delivery-outcome.js';
import { type DeliveryWrite, recordDeliveryWrites } from './delivery-recorder.js';
import { createDeliveryAgent, createDeliverySender, type DeliverySender } from './delivery-sender.js';
import { DISPATCH_BATCH, dispatchEvents } from './event-dispatcher.js';
import { judgeAttempt } from './retry-schedule.js';
import type { SecretBox } from './secret-box.js';
import type { WebhookConfig } from './webhook-config.js';

/** What a delivery worker is built from. */
export interface DeliveryWorkerOptions {
  storage: Storage;
  config: WebhookConfig;
  secretBox: SecretBox;
  logger: Logger;
  clock: Clock;
  /**
   * The connection pool attempts go through: the seam for the connect-time address check (an Agent whose
   * `connect.lookup` refuses non-public addresses). Default: a plain Agent bounded by the timeout, closed
   * on stop; a dispatcher passed in is the caller's to close.
   */
  dispatcher?: Dispatcher;
  /** Jitter source, [0, 1). */
  random?: () => number;
  /** Names this worker's claims (`locked_by`); unique per instance by default. */
  workerId?: string;
}

/**
 * Delivers webhooks: fans out committed events to deliveries, claims due deliveries with a lease, makes up
 * to `concurrency` signed attempts at once, and records their outcomes in batches (one transaction for
 * every outcome that ended meanwhile). Wakes at once when this process commits events, and otherwise
 * polls every `pollIntervalMs`.
 */
export class DeliveryWorker implements BackgroundWorker {
  readonly name = 'webhook-delivery';
  readonly workerId: string;
  readonly #options: DeliveryWorkerOptions;
  readonly #send: DeliverySender;
  readonly #ownedAgent: Dispatcher | undefined;
  readonly #recorder: GroupCommitter<DeliveryWrite>;
  readonly #inFlight = new Set<Promise<void>>();
  #running = false;
  #healthy = true;
  #loop: Promise<void> | undefined;
  #unsubscribe: (() => void) | undefined;
  #wake: (() => void) | undefined;
  #waitingForSlots = false;
  /** Something woke the loop while it was busy: it looks again before sleeping. */
  #signalled = false;

  constructor(options: DeliveryWorkerOptions) {
    this.#options = options;
    this.workerId = options.workerId ?? `${hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`;
    this.#ownedAgent = options.dispatcher ? undefined : createDeliveryAgent(options.config.timeoutMs);
    const dispatcher = options.dispatcher ?? (this.#ownedAgent as Dispatcher);
    this.#send = createDeliverySender({ timeoutMs: options.config.timeoutMs, dispatcher });
    this.#recorder = new GroupCommitter((writes) =>
      recordDeliveryWrites(options.storage, writes, {
        workerId: this.workerId,
        now: options.clock.now(),
        disableAfterFailingMs: options.config.disableAfterFailingMs,
      }),
    );
  }

  get running(): boolean {
    return this.#running && this.#healthy;
  }

  start(): void {
    if (this.#loop) return;
    this.#running = true;
    this.#unsubscribe = this.#options.storage.outbox.subscribe(() => this.#signal());
    this.#loop = this.#run();
  }

  /** Stops claiming, lets attempts in flight finish and records them, gives back any claim left, resolves. */
  async stop(): Promise<void> {
    if (!this.#running) return;
    this.#running = false;
    this.#unsubscribe?.();
    this.#signal();
    await this.#loop;
    await Promise.all(this.#inFlight);
    await this.#recorder.close();
    try {
      await releaseClaims(this.#options.storage, this.workerId);
    } catch (error) {
      this.#options.logger.error('could not release webhook delivery claims', {
        error: describeError(error),
      });
    }
    await this.#ownedAgent?.close();
  }

  async #run(): Promise<void> {
    const { config, storage, clock, secretBox, logger } = this.#options;
    while (this.#running) {
      let moreWork = false;
      let atCapacity = false;
      this.#signalled = false;
      try {
        const dispatched = await dispatchEvents(storage, clock.now());
        const free = config.concurrency - this.#inFlight.size;
        if (free > 0 && this.#running) {
          const claimed = await claimDueDeliveries(storage, secretBox, {
            workerId: this.workerId,
            now: clock.now(),
            leaseMs: config.leaseMs,
            limit: free,
          });
          for (const delivery of claimed) this.#launch(delivery);
          atCapacity = claimed.length === free;
        } else atCapacity = free <= 0;
        moreWork = dispatched === DISPATCH_BATCH && !atCapacity;
        this.#healthy = true;
      } catch (error) {
        this.#healthy = false;
        logger.error('webhook delivery loop failed; retrying after the poll interval', {
          error: describeError(error),
        });
      }
      if (moreWork || !this.#running) continue;
      this.#waitingForSlots = atCapacity;
      await this.#sleep(config.pollIntervalMs);
      this.#waitingForSlots = false;
    }
  }

  #launch(delivery: ClaimedDelivery): void {
    const attempt = this.#attempt(delivery).finally(() => {
      this.#inFlight.delete(attempt);
      // Claim again once a few slots are free, rather than one claim per finished attempt.
      const free = this.#options.config.concurrency - this.#inFlight.size;
      if (this.#waitingForSlots && free >= Math.max(1, this.#options.config.concurrency >> 3)) this.#signal();
    });
    this.#inFlight.add(attempt);
  }

  async #attempt(delivery: ClaimedDelivery): Promise<void> {
    const { clock, config, logger } = this.#options;
    const claim = {
      deliveryId: delivery.id,
      webhookId: delivery.webhookId,
      lockedUntil: delivery.lockedUntil,
    };
    let write: DeliveryWrite;
    if (!delivery.webhookActive) {
      write = { kind: 'cancel', claim };
    } else {
      const attemptedAt = clock.now();
      const sent = await this.#send({
        url: delivery.url,
        eventId: delivery.eventId,
        payload: delivery.payload,
        secrets: delivery.secrets,
        timestampSeconds: Math.floor(attemptedAt.getTime() / 1000),
      });
      const now = clock.now();
      const verdict = judgeAttempt(sent, now);
      const succeededBefore =
        delivery.trigger === 'manual' &&
        verdict.kind === 'failed' &&
        (await this.#succeededBefore(delivery.id));
      const position = {
        failedScheduledAttempts: delivery.failedScheduledAttempts,
        trigger: delivery.trigger,
        succeededBefore,
      };
      const next = nextDeliveryState(config, position, verdict, now, this.#options.random ?? Math.random);
      write = { kind: 'attempt', claim, trigger: delivery.trigger, attemptedAt, sent, verdict, next };
    }
    try {
      await this.#recorder.add(write);
    } catch (error) {
      // The claim stays leased; when the lease expires the delivery is attempted again (at least once).
      logger.error('could not record a webhook delivery', {
        deliveryId: delivery.id,
        error: describeError(error),
      });
    }
  }

  /** Whether an earlier attempt of the delivery succeeded (it was `succeeded` before a redelivery). */
  async #succeededBefore(deliveryId: string): Promise<boolean> {
    const row = await this.#options.storage.db
      .selectFrom('delivery_attempts')
      .select('id')
      .where('delivery_id', '=', deliveryId)
      .where('status_code', '>=', 200)
      .where('status_code', '<', 300)
      .where('error', 'is', null)
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Waits `ms`, or less when signalled; returns at once when a signal came since the loop last looked. */
  #sleep(ms: number): Promise<void> {
    if (this.#signalled) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.#wake?.(), ms);
      this.#wake = () => {
        clearTimeout(timer);
        this.#wake = undefined;
        resolve();
      };
    });
  }

  #signal(): void {
    if (this.#wake) this.#wake();
    else this.#signalled = true;
  }
}
