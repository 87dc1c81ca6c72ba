import { testFeatures } from './test-features.js';
/**
 * Test fixtures for the delivery engine: webhooks, secrets and events written straight into the database
 * (as the API would), a real HTTP receiver on 127.0.0.1, a settable clock, and a deadline-bound wait.
 */

import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitUntil } from '@scenario-scoring/testkit';
import { afterEach } from 'vitest';
import { type Clock, systemClock } from '../../src/common/clock.js';
import { newId } from '../../src/common/ids.js';
import { type EventType, insertEvents, newEvent } from '../../src/events/event-outbox.js';
import { silentLogger } from '../../src/request-logging/logger.js';
import type { Storage } from '../../src/storage/storage.js';
import { insertNewWebhook, rotateSecretRows } from '../../src/webhooks/api/webhook-store.js';
import { DeliveryWorker, type DeliveryWorkerOptions } from '../../src/webhooks/delivery/delivery-worker.js';
import type { SecretBox } from '../../src/webhooks/outbound/secret-box.js';
import { generateWebhookSecret } from '../../src/webhooks/outbound/webhook-signature.js';
import type { WebhookConfig } from '../../src/webhooks/webhook-config.js';
import type { RetiredWebhookSignal } from '../../src/webhooks/webhook-registry.js';
import { testConfig } from './test-server.js';

/** The system clock shifted by an offset tests move by hand: 5 days pass in a line, and time still flows. */
export class FakeClock implements Clock {
  #offsetMs = 0;
  now(): Date {
    return new Date(Date.now() + this.#offsetMs);
  }
  advance(ms: number): void {
    this.#offsetMs += ms;
  }
}

/** Creates an active webhook with a current secret; returns its id and the plaintext secret. */
export async function createTestWebhook(
  storage: Pick<Storage, 'db'>,
  secretBox: SecretBox,
  options: { tenantId: string; url: string; events?: string[]; now?: Date },
): Promise<{ id: string; secret: string }> {
  const secret = generateWebhookSecret();
  const webhook = { tenantId: options.tenantId, url: options.url, events: options.events ?? ['*'] };
  const { id } = await storage.db
    .transaction()
    .execute((trx) => insertNewWebhook(trx, webhook, secretBox.seal(secret), options.now ?? new Date()));
  return { id, secret };
}

/** Rotates as the API does: the current secret expires after `graceMs`, a new one becomes current. */
export async function rotateTestSecret(
  storage: Pick<Storage, 'db'>,
  secretBox: SecretBox,
  webhookId: string,
  options: { now: Date; graceMs: number },
): Promise<string> {
  const secret = generateWebhookSecret();
  const next = { id: newId('sec'), ciphertext: secretBox.seal(secret) };
  const times = {
    now: options.now.toISOString(),
    oldExpiresAt: new Date(options.now.getTime() + options.graceMs).toISOString(),
  };
  await storage.db.transaction().execute((trx) => rotateSecretRows(trx, webhookId, next, times));
  return secret;
}

/** Commits `count` events for the tenant in one transaction, then wakes the delivery workers; returns their ids. */
export async function commitTestEvents(
  storage: Storage,
  tenantId: string,
  options: { count?: number; now?: Date; type?: EventType } = {},
): Promise<string[]> {
  const now = options.now ?? new Date();
  const events = Array.from({ length: options.count ?? 1 }, (_, n) =>
    options.type === undefined || options.type === 'webhook.test'
      ? newEvent(
          tenantId,
          'webhook.test',
          { webhook_id: 'wh_01JZ4VD5E7F9G1H3J5K7M9N1P3', message: `test ${n}` },
          now,
        )
      : newEvent(tenantId, options.type, {} as never, now),
  );
  await storage.db.transaction().execute((trx) => insertEvents(trx, events));
  testFeatures(storage).outbox.notify();
  return events.map((event) => event.id);
}

/** A request a receiver got. */
export interface ReceivedRequest {
  method: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A real HTTP receiver on 127.0.0.1; `respond` answers each request (default: 200 "ok"). */
export interface TestReceiver {
  readonly url: string;
  readonly requests: ReceivedRequest[];
  close(): Promise<void>;
}

/** Starts a receiver; `respond` gets the request, its 0-based index and the response to write. */
export async function startTestReceiver(
  respond: (request: ReceivedRequest, index: number, res: ServerResponse) => unknown = (_r, _i, res) =>
    res.end('ok'),
): Promise<TestReceiver> {
  const requests: ReceivedRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request = {
        method: req.method ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      const index = requests.push(request) - 1;
      void respond(request, index, res);
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The delivery settings of tests: the test server's (a compressed schedule), with a shorter poll and only
 * 127.0.0.1 allowlisted; `overrides` on top.
 */
export function testWebhookConfig(overrides: Partial<WebhookConfig> = {}): WebhookConfig {
  return { ...testConfig().webhooks, allowedCidrs: ['127.0.0.1/32'], pollIntervalMs: 20, ...overrides };
}

/**
 * Starts a delivery worker on `storage` with the test settings. Stop it at the end of the test. It hears of
 * the webhooks the test server deletes or disables (the signal of testFeatures) unless `retired` is another
 * signal, as a worker of another instance.
 */
export function startTestWorker(
  storage: Storage,
  secretBox: SecretBox,
  options: {
    config?: Partial<WebhookConfig>;
    clock?: Clock;
    retired?: RetiredWebhookSignal;
    pacer?: DeliveryWorkerOptions['pacer'];
  } = {},
): DeliveryWorker {
  const worker = new DeliveryWorker({
    storage,
    outbox: testFeatures(storage).outbox,
    retired: options.retired ?? testFeatures(storage).retiredWebhooks,
    secretBox,
    config: testWebhookConfig(options.config),
    logger: silentLogger,
    clock: options.clock ?? systemClock,
    ...(options.pacer && { pacer: options.pacer }),
  });
  worker.start();
  return worker;
}

/**
 * The workers and receivers of a delivery suite over `storage`: each test's are stopped and closed after
 * it, and its pending deliveries cancelled, so that no leftover is attempted in the next test.
 */
export function useDeliveryFixtures(storage: () => Storage, secretBox: SecretBox) {
  const workers: DeliveryWorker[] = [];
  const receivers: TestReceiver[] = [];
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await Promise.all(receivers.splice(0).map((r) => r.close()));
    await storage()
      .db.updateTable('deliveries')
      .set({ status: 'cancelled' })
      .where('status', '=', 'pending')
      .execute();
  });
  return {
    /** Starts a delivery worker with the test settings (see {@link startTestWorker}). */
    worker(options?: Parameters<typeof startTestWorker>[2]): DeliveryWorker {
      const started = startTestWorker(storage(), secretBox, options);
      workers.push(started);
      return started;
    },
    /** Starts a receiver (see {@link startTestReceiver}). */
    async receiver(...args: Parameters<typeof startTestReceiver>): Promise<TestReceiver> {
      const started = await startTestReceiver(...args);
      receivers.push(started);
      return started;
    },
  };
}

/** The delivery of an event (there is one webhook per test tenant), or undefined before the fan-out. */
export function deliveryOf(storage: Pick<Storage, 'db'>, eventId: string) {
  return storage.db.selectFrom('deliveries').selectAll().where('event_id', '=', eventId).executeTakeFirst();
}

/** The attempts of a delivery, oldest first. */
export function attemptsOf(storage: Pick<Storage, 'db'>, deliveryId: string) {
  return storage.db
    .selectFrom('delivery_attempts')
    .selectAll()
    .where('delivery_id', '=', deliveryId)
    .orderBy('attempted_at')
    .orderBy('id')
    .execute();
}

/** Waits until the event's delivery has left `pending` (or matches `done`), and returns it. */
export function settledDelivery(
  storage: Pick<Storage, 'db'>,
  eventId: string,
  done: (delivery: NonNullable<Awaited<ReturnType<typeof deliveryOf>>>) => boolean = (d) =>
    d.status !== 'pending',
) {
  return waitUntil(
    async () => {
      const delivery = await deliveryOf(storage, eventId);
      return delivery !== undefined && done(delivery) && delivery;
    },
    10_000,
    `the delivery of ${eventId}`,
  );
}

/** A webhook's deliveries counted by status (`{ pending: 3, cancelled: 2 }`). */
export async function deliveryStatuses(
  storage: Pick<Storage, 'db'>,
  webhookId: string,
): Promise<Record<string, number>> {
  const rows = await storage.db
    .selectFrom('deliveries')
    .select(['status', (eb) => eb.fn.countAll<number | string>().as('count')])
    .where('webhook_id', '=', webhookId)
    .groupBy('status')
    .execute();
  return Object.fromEntries(rows.map((row) => [row.status, Number(row.count)]));
}
