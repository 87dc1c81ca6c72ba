import type { WebhookEvent } from './api-types.js';

/** The type of an event: `run.completed`, `run.failed`, `policy.escalated` or `webhook.test`. */
export type WebhookEventType = WebhookEvent['type'];

/** The event of type `T`, with its `data` typed. */
export type WebhookEventOf<T extends WebhookEventType> = Extract<WebhookEvent, { type: T }>;

/** A handler per event type, each receiving its own event type; leave out the types you ignore. */
export type WebhookEventHandlers<R> = {
  [T in WebhookEventType]?: (event: WebhookEventOf<T>) => R;
};

/**
 * Calls the handler for `event.type` with the event narrowed to that type, and returns what it returns;
 * `otherwise` (if given) handles types without a handler, including types newer than this client.
 *
 * ```ts
 * await handleWebhookEvent(verifyWebhook(body, headers, secret), {
 *   'run.completed': async (event) => fetchResults(event.data.run_id),
 *   'policy.escalated': async (event) => review(event.data),
 * });
 * ```
 */
export function handleWebhookEvent<R>(
  event: WebhookEvent,
  handlers: WebhookEventHandlers<R>,
  otherwise?: (event: WebhookEvent) => R,
): R | undefined {
  const handler = handlers[event.type] as ((event: WebhookEvent) => R) | undefined;
  if (handler) return handler(event);
  return otherwise?.(event);
}
