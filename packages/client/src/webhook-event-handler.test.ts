import { describe, expect, expectTypeOf, it } from 'vitest';
import type { PolicyEscalatedEvent, RunCompletedEvent, WebhookEvent, WebhookTestEvent } from './api-types.js';
import { handleWebhookEvent, type WebhookEventOf, type WebhookEventType } from './webhook-event-handler.js';

const TEST_EVENT: WebhookTestEvent = {
  id: 'evt_01JZ4V8Q6Y3M2N5P7R9S1T3V5X',
  type: 'webhook.test',
  timestamp: '2026-03-01T12:00:00Z',
  data: { webhook_id: 'wh_01JZ4V8Q6Y3M2N5P7R9S1T3V5X', message: 'hello' },
};

describe('handleWebhookEvent', () => {
  it('calls the handler of the event type with the event, and returns its answer', () => {
    const seen: string[] = [];
    const answer = handleWebhookEvent<string>(TEST_EVENT, {
      'webhook.test': (event) => {
        seen.push(event.data.message);
        return event.data.webhook_id;
      },
      'run.completed': () => 'wrong',
    });
    expect(answer).toBe(TEST_EVENT.data.webhook_id);
    expect(seen).toEqual(['hello']);
  });

  it('falls back to otherwise for types without a handler, including types newer than the client', () => {
    const newer = { ...TEST_EVENT, type: 'run.paused' } as unknown as WebhookEvent;
    expect(
      handleWebhookEvent(newer, { 'webhook.test': () => 'test' }, (event) => `other: ${event.type}`),
    ).toBe('other: run.paused');
    expect(handleWebhookEvent(TEST_EVENT, {})).toBeUndefined();
  });

  it('takes handlers returning a Promise or nothing in any mix, and answers the union of what they return', async () => {
    const seen: string[] = [];
    const mixed = handleWebhookEvent(TEST_EVENT, {
      'run.completed': async (event) => {
        seen.push(event.data.run_id);
      },
      'webhook.test': (event) => {
        seen.push(event.data.message);
      },
    });
    expectTypeOf(mixed).toEqualTypeOf<Promise<void> | void | undefined>();
    await mixed;
    // A plain otherwise beside async handlers; otherwise's answer replaces the undefined.
    const withOtherwise = handleWebhookEvent(
      { ...TEST_EVENT, type: 'run.paused' } as unknown as WebhookEvent,
      { 'run.completed': async () => 'completed' },
      (event) => void seen.push(`other: ${event.type}`),
    );
    expectTypeOf(withOtherwise).toEqualTypeOf<Promise<string> | undefined>();
    await withOtherwise;
    const numbers = handleWebhookEvent(TEST_EVENT, { 'webhook.test': () => 1 }, async () => 'two');
    expectTypeOf(numbers).toEqualTypeOf<number | Promise<string>>();
    expect(numbers).toBe(1);
    expect(seen).toEqual(['hello', 'other: run.paused']);
  });

  it('narrows each handler to its own event type', () => {
    expectTypeOf<WebhookEventType>().toEqualTypeOf<
      | 'run.completed'
      | 'run.failed'
      | 'policy.escalated'
      | 'webhook.test'
      | 'subject.erased'
      | 'webhook.disabled'
      | 'delivery.exhausted'
    >();
    expectTypeOf<WebhookEventOf<'run.completed'>>().toEqualTypeOf<RunCompletedEvent>();
    expectTypeOf<WebhookEventOf<'policy.escalated'>>().toEqualTypeOf<PolicyEscalatedEvent>();
    handleWebhookEvent(TEST_EVENT, {
      'run.completed': (event) => {
        expectTypeOf(event.data.counts.succeeded).toEqualTypeOf<number>();
        expectTypeOf(event.data.run_id).toEqualTypeOf<string>();
      },
      'policy.escalated': (event) => {
        expectTypeOf(event.data.log_cid).toEqualTypeOf<string>();
        // @ts-expect-error a policy.escalated event has no counts
        void event.data.counts;
      },
      // @ts-expect-error no such event type
      'run.finished': () => undefined,
    });
  });
});
