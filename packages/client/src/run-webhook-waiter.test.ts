import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import type { RunCompletedEvent, RunFailedEvent } from './api-types.js';
import { isRunEndEvent, RunEndWaiter } from './run-webhook-waiter.js';
import { verifyWebhook } from './webhook-verifier.js';

const SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
const RUN_A = 'run_01JZ4VB2C4D6E8F0G2H4J6K8M0';
const RUN_B = 'run_01JZ4VB2C4D6E8F0G2H4J6K8M1';
const counts = { succeeded: 2, failed: 0, escalated: 0 };

/** A delivery as the server sends it: the raw body and its Standard Webhooks headers. */
function delivery(event: RunCompletedEvent | RunFailedEvent) {
  const body = JSON.stringify(event);
  const timestamp = new Date();
  const signature = new Webhook(SECRET).sign(event.id, timestamp, body);
  const headers = {
    'webhook-id': event.id,
    'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
    'webhook-signature': signature,
  };
  return verifyWebhook(body, headers, SECRET);
}
const completed = (runId: string, id = 'evt_01JZ4VF8G0H2J4K6M8N0P2Q4R6'): RunCompletedEvent => ({
  id,
  type: 'run.completed',
  timestamp: '2026-11-22T10:00:00.120Z',
  data: {
    run_id: runId,
    status: 'completed',
    item_count: 2,
    counts,
    completed_at: '2026-11-22T10:00:00.120Z',
  },
});

describe('RunEndWaiter', () => {
  it('when the run’s verified run.completed arrives, then wait resolves with it; other runs’ events do not', async () => {
    const runs = new RunEndWaiter();
    const waiting = runs.wait(RUN_A);
    expect(runs.deliver(delivery(completed(RUN_B)))).toBe(true);
    expect(runs.deliver(delivery(completed(RUN_A)))).toBe(true);
    await expect(waiting).resolves.toMatchObject({ type: 'run.completed', data: { run_id: RUN_A } });
  });

  it('when the event arrived before wait was called, then wait resolves at once', async () => {
    const runs = new RunEndWaiter();
    const failed: RunFailedEvent = {
      id: 'evt_01JZ4VF9H1J3K5M7N9P1Q3R5S8',
      type: 'run.failed',
      timestamp: '2026-11-22T10:10:00.000Z',
      data: {
        run_id: RUN_A,
        status: 'failed',
        item_count: 2,
        counts,
        completed_at: '2026-11-22T10:10:00.000Z',
        error: {
          type: '/docs#section/errors/run_deadline_exceeded',
          title: 'Run deadline exceeded',
          status: 504,
          detail: 'late',
          code: 'run_deadline_exceeded',
        },
      },
    };
    runs.deliver(delivery(failed));
    await expect(runs.wait(RUN_A)).resolves.toMatchObject({ data: { status: 'failed' } });
  });

  it('ignores events that do not end a run, and rejects a wait whose signal aborts', async () => {
    const runs = new RunEndWaiter();
    const test = {
      id: 'evt_1',
      type: 'webhook.test',
      timestamp: '2026-11-22T10:00:00.000Z',
      data: { webhook_id: 'wh_1', message: 'hi' },
    } as const;
    expect(runs.deliver(test as never)).toBe(false);
    expect(isRunEndEvent(completed(RUN_A), RUN_B)).toBe(false);
    await expect(runs.wait(RUN_A, { signal: AbortSignal.abort(new Error('stop')) })).rejects.toThrow('stop');
  });

  it('forgets the oldest ended runs beyond its bound', async () => {
    const runs = new RunEndWaiter({ remembered: 1 });
    runs.deliver(completed(RUN_A));
    runs.deliver(completed(RUN_B, 'evt_01JZ4VF8G0H2J4K6M8N0P2Q4R7'));
    const controller = new AbortController();
    const waiting = runs.wait(RUN_A, { signal: controller.signal });
    controller.abort(new Error('not remembered'));
    await expect(waiting).rejects.toThrow('not remembered');
    await expect(runs.wait(RUN_B)).resolves.toMatchObject({ data: { run_id: RUN_B } });
  });
});
