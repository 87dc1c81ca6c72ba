import { randomBytes } from 'node:crypto';
import { NoteSigner } from '@scenario-scoring/tlog';
import { afterEach, expect, it } from 'vitest';
import { forEachDatabase } from '../test/support/test-databases.js';
import { testFeatures } from '../test/support/test-features.js';
import { testConfig } from '../test/support/test-server.js';
import {
  attemptsOf,
  commitTestEvents,
  createTestWebhook,
  settledDelivery,
  startTestReceiver,
  type TestReceiver,
} from '../test/support/test-webhooks.js';
import { systemClock } from './common/clock.js';
import { createWorkers } from './create-workers.js';
import { createMetrics } from './metrics/metrics.js';
import { silentLogger } from './request-logging/logger.js';
import { SecretBox } from './webhooks/outbound/secret-box.js';
import type { BackgroundWorker } from './workers/background-worker.js';

const secretBox = new SecretBox(randomBytes(32));

// The workers as the runtime builds them: the delivery worker connects through the checked connector.
forEachDatabase('the workers of an instance', ({ storage }) => {
  let workers: BackgroundWorker[] = [];
  let receiver: TestReceiver | undefined;
  afterEach(async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
    workers = [];
    await receiver?.close();
  });
  const start = (allowedCidrs: string[]) => {
    const base = testConfig();
    const config = { ...base, webhooks: { ...base.webhooks, allowedCidrs, retryScheduleMs: [10] } };
    const metrics = createMetrics({ processMetrics: false });
    workers = createWorkers({
      features: testFeatures(storage()),
      config,
      secretBox,
      logger: silentLogger,
      clock: systemClock,
      metrics,
      logSigner: new NoteSigner('test', randomBytes(32)),
    });
    for (const worker of workers) worker.start();
    return metrics;
  };

  it('when a webhook resolves to an address that is not allowlisted, then no connection is made and each attempt says why', async () => {
    receiver = await startTestReceiver();
    // Only the test event: the delivery.exhausted event its failure raises has no subscriber, so it leaves
    // nothing pending for the next test's workers.
    await createTestWebhook(storage(), secretBox, {
      tenantId: 'ssrf-refused',
      url: receiver.url,
      events: ['webhook.test'],
    });
    start([]);
    const [eventId] = await commitTestEvents(storage(), 'ssrf-refused');
    const delivery = await settledDelivery(storage(), eventId as string);
    expect(delivery.status).toBe('failed');
    const attempts = await attemptsOf(storage(), delivery.id);
    expect(attempts).toHaveLength(2);
    for (const attempt of attempts) {
      expect(attempt.status_code).toBe(0);
      expect(attempt.error).toMatch(/127\.0\.0\.1.*loopback/);
    }
    expect(receiver.requests).toHaveLength(0);
  });

  it('when the address is allowlisted, then the delivery arrives and the metrics count it', async () => {
    receiver = await startTestReceiver();
    await createTestWebhook(storage(), secretBox, { tenantId: 'ssrf-allowed', url: receiver.url });
    const metrics = start(['127.0.0.1/32']);
    const [eventId] = await commitTestEvents(storage(), 'ssrf-allowed');
    expect((await settledDelivery(storage(), eventId as string)).status).toBe('succeeded');
    expect(receiver.requests).toHaveLength(1);
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/webhook_delivery_attempts_total\{result="succeeded"\} 1/);
    expect(text).toMatch(/webhook_delivery_lag_seconds_count 1/);
  });
});
