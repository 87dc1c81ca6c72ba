import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:net';
import { expect, it } from 'vitest';
import { forEachDatabase } from '../../../test/support/test-databases.js';
import {
  attemptsOf,
  commitTestEvents,
  createTestWebhook,
  deliveryOf,
  settledDelivery,
  useDeliveryFixtures,
} from '../../../test/support/test-webhooks.js';
import { silentLogger } from '../../request-logging/logger.js';
import { SecretBox } from '../outbound/secret-box.js';
import type { DeliveryWrite } from './delivery-recorder.js';
import { dispatchEvents } from './event-dispatcher.js';
import { recordIsolated, UNSTORABLE_OUTCOME_ERROR } from './isolated-recorder.js';
import { storableFromBytes } from './storable-text.js';

const secretBox = new SecretBox(randomBytes(32));
let tenants = 0;
const nextTenant = () => `hostile-${++tenants}-${randomBytes(3).toString('hex')}`;

/** A receiver writing `raw` as its whole answer, status line included (what Node's http refuses to send). */
async function rawReceiver(raw: string | Buffer): Promise<{ url: string; server: Server }> {
  const server = createServer((socket) => {
    socket.on('data', () => socket.end(raw));
    socket.on('error', () => {});
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, server };
}

it('makes a response body storable, flagging replaced bytes', () => {
  expect(storableFromBytes(Buffer.from('ok'))).toEqual({ text: 'ok', replaced: false });
  expect(storableFromBytes(Buffer.from('ok\u0000'))).toEqual({ text: 'ok\ufffd', replaced: true });
  expect(storableFromBytes(Buffer.from([0x61, 0xc3, 0x28]))).toEqual({ text: 'a\ufffd(', replaced: true });
  expect(storableFromBytes(Buffer.from('\ufffd'))).toEqual({ text: '\ufffd', replaced: false });
});

forEachDatabase('hostile webhook receivers', ({ storage }) => {
  const { worker, receiver } = useDeliveryFixtures(storage, secretBox);

  // PostgreSQL refuses a NUL in text: stored as received, it would fail the whole batch of outcomes, so
  // every delivery in it, other tenants' included, would stay pending and be sent again every lease.
  it("a NUL in one receiver's answers neither repeats its deliveries nor another tenant's", async () => {
    const [hostile, canary] = [nextTenant(), nextTenant()];
    const bad = await receiver((_r, _i, res) => res.end('ok\u0000'));
    const good = await receiver();
    await createTestWebhook(storage(), secretBox, { tenantId: hostile, url: bad.url });
    await createTestWebhook(storage(), secretBox, { tenantId: canary, url: good.url });
    const badEvents = await commitTestEvents(storage(), hostile, { count: 20 });
    const goodEvents = await commitTestEvents(storage(), canary, { count: 20 });
    // A lease and a timeout with room for a loaded machine (a CI run beside other work once took the second
    // attempt of a delivery at 1 s and 500 ms): the test is about the NUL, not about slowness.
    worker({ config: { leaseMs: 5_000, timeoutMs: 2_000 } });
    for (const eventId of [...badEvents, ...goodEvents]) {
      expect(await settledDelivery(storage(), eventId)).toMatchObject({
        status: 'succeeded',
        attempt_count: 1,
      });
    }
    // Longer than a lease: nothing is sent again.
    await new Promise((resolve) => setTimeout(resolve, 5_500));
    expect(bad.requests).toHaveLength(20);
    expect(good.requests).toHaveLength(20);
    const delivery = await deliveryOf(storage(), badEvents[0] as string);
    const [attempt] = await attemptsOf(storage(), delivery?.id as string);
    expect(attempt?.response_body).toBe('ok\ufffd');
    expect(attempt?.response_body_replaced).toBe(1);
  });

  // The contract lists status codes 100-599: any other status, or a 101 no one asked for, is an invalid
  // response, not a status_code out of the contract nor an assertion message from the HTTP client.
  it('records a status outside 100-599 and an unasked 101 as invalid responses', async () => {
    for (const [statusLine, expected] of [
      ['HTTP/1.1 600 X', /^invalid_response: status 600 is outside 100-599$/],
      ['HTTP/1.1 101 Switching Protocols', /^invalid_response: /],
      ['HTTP/1.1 099 X', /^invalid_response: /],
    ] as const) {
      const tenant = nextTenant();
      const raw = await rawReceiver(`${statusLine}\r\ncontent-length: 2\r\n\r\nok`);
      try {
        await createTestWebhook(storage(), secretBox, { tenantId: tenant, url: raw.url });
        worker({ config: { retryScheduleMs: [] } });
        const [eventId] = (await commitTestEvents(storage(), tenant)) as [string];
        const delivery = await settledDelivery(storage(), eventId);
        expect(delivery.status).toBe('failed');
        const [attempt] = await attemptsOf(storage(), delivery.id);
        expect(attempt?.status_code).toBe(0);
        expect(attempt?.error).toMatch(expected);
      } finally {
        raw.server.close();
      }
    }
  });

  it('isolates an outcome the database refuses: the others commit, it is settled on its own', async () => {
    const tenant = nextTenant();
    await createTestWebhook(storage(), secretBox, { tenantId: tenant, url: 'http://127.0.0.1:9/never' });
    const events = await commitTestEvents(storage(), tenant, { count: 3 });
    // Fan out and claim them as the worker would, then write outcomes of which one carries raw NUL text.
    const now = new Date();
    const lockedUntil = new Date(now.getTime() + 60_000).toISOString();
    const { claimed } = await dispatchEvents(storage(), now, {
      claim: { workerId: 'isolation-test', lockedUntil, max: 10 },
    });
    const deliveries = claimed
      .filter((d) => events.includes(d.eventId))
      .map((d) => ({ id: d.id, webhook_id: d.webhookId, event_id: d.eventId }));
    expect(deliveries).toHaveLength(3);
    const writes: DeliveryWrite[] = deliveries.map((d, n) => ({
      kind: 'attempt',
      claim: { deliveryId: d.id, webhookId: d.webhook_id, lockedUntil },
      trigger: 'scheduled',
      attemptedAt: now,
      sent: { statusCode: 200, error: null, durationMs: 1, responseBody: n === 1 ? 'raw\u0000nul' : 'ok' },
      verdict: { kind: 'succeeded' },
      next: { status: 'succeeded', failedScheduledAttempts: 0, nextAttemptAt: null },
    }));
    await recordIsolated(
      storage(),
      writes,
      { workerId: 'isolation-test', now, disableAfterFailingMs: 86_400_000 },
      silentLogger,
    );
    for (const [n, d] of deliveries.entries()) {
      const after = await deliveryOf(storage(), d.event_id);
      expect(after).toMatchObject({ locked_by: null, status: 'succeeded', attempt_count: 1 });
      const attempts = await attemptsOf(storage(), d.id);
      expect(attempts).toHaveLength(1);
      if (n !== 1) expect(attempts[0]?.response_body).toBe('ok');
      else if (storage().kind === 'postgres') expect(attempts[0]?.error).toBe(UNSTORABLE_OUTCOME_ERROR);
    }
  });
});
