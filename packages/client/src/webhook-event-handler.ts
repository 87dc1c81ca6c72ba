import type { WebhookEvent } from './api-types.js';

/**
 * The type of an event: `run.completed`, `run.failed`, `policy.escalated`, `subject.erased`,
 * `webhook.test`, and the operational `webhook.disabled` and `delivery.exhausted`.
 */
export type WebhookEventType = WebhookEvent['type'];

/** The event of type `T`, with its `data` typed. */
export type WebhookEventOf<T extends WebhookEventType> = Extract<WebhookEvent, { type: T }>;

/** A handler per event type, each receiving its own event type; leave out the types you ignore. */
export type WebhookEventHandlers<R = unknown> = {
  [T in WebhookEventType]?: (event: WebhookEventOf<T>) => R;
};

/** What any of `H`'s handlers returns: `Promise<void> | void` for a mix of async and plain handlers. */
export type WebhookHandlersResult<H> = {
  [T in keyof H]-?: NonNullable<H[T]> extends (...args: never[]) => infer R ? R : never;
}[keyof H];

/** Refuses a key of `H` that is no event type (a typo such as `'run.complete'`). */
type OnlyEventTypes<H> = { [K in Exclude<keyof H, WebhookEventType>]: never };

/**
 * Calls the handler for `event.type` with the event narrowed to that type, and returns what it returns;
 * `otherwise` (if given) handles types without a handler, including types newer than this client. The
 * handlers may return anything, each its own type (`void` or a `Promise`, in any mix): the result is the
 * union of what they (and `otherwise`) return, with `undefined` when there is no `otherwise`; `await` it
 * to wait for an async handler.
 *
 * ```ts
 * await handleWebhookEvent(verifyWebhook(body, headers, secret), {
 *   'run.completed': async (event) => fetchResults(event.data.run_id),
 *   'policy.escalated': (event) => console.log('review', event.data.log_cid),
 * });
 * ```
 */
export function handleWebhookEvent<R = never, H extends WebhookEventHandlers = WebhookEventHandlers<R>>(
  event: WebhookEvent,
  handlers: H & OnlyEventTypes<H>,
): WebhookHandlersResult<H> | undefined;
export function handleWebhookEvent<O, H extends WebhookEventHandlers = WebhookEventHandlers<O>>(
  event: WebhookEvent,
  handlers: H & OnlyEventTypes<H>,
  otherwise: (event: WebhookEvent) => O,
): WebhookHandlersResult<H> | O;
export function handleWebhookEvent(
  event: WebhookEvent,
  handlers: WebhookEventHandlers,
  otherwise?: (event: WebhookEvent) => unknown,
): unknown {
  const handler = handlers[event.type] as ((event: WebhookEvent) => unknown) | undefined;
  if (handler) return handler(event);
  return otherwise?.(event);
}
