import type { EventType } from '@scenario-scoring/api-types';
import { AppError } from '../errors/app-error.js';
import { validationDetail } from '../errors/validation-detail.js';

/** The event types a webhook can subscribe to (the contract's EventType). */
export const EVENT_TYPES: readonly EventType[] = [
  'run.completed',
  'run.failed',
  'policy.escalated',
  'webhook.test',
  'subject.erased',
  'webhook.disabled',
  'delivery.exhausted',
];

/** The operational events: a delivery of one that gives up raises no `delivery.exhausted` of its own. */
export const OPERATIONAL_EVENT_TYPES: readonly EventType[] = ['webhook.disabled', 'delivery.exhausted'];

/** Every type, present and future. */
export const ALL_EVENTS = '*';

/** Whether a webhook's event filter (`["*"]` for all) takes events of `type`. */
export function webhookWants(filter: readonly string[], type: string): boolean {
  return filter.includes(ALL_EVENTS) || filter.includes(type);
}

/**
 * Checks an event filter the contract's schema already shaped (a non-empty list of unique names): every
 * name must be a known type, or the list must be exactly `["*"]`. An unknown type is a 422
 * `unknown_event_type` naming each one; `"*"` beside types is a 400, since it would make them meaningless.
 */
export function checkEventFilter(events: readonly string[]): void {
  const unknown = events.filter((type) => type !== ALL_EVENTS && !EVENT_TYPES.includes(type as EventType));
  if (unknown.length > 0) {
    const named = unknown.map((type) => `'${type}'`).join(', ');
    const verb = unknown.length === 1 ? 'is not an event type' : 'are not event types';
    throw new AppError('unknown_event_type', {
      detail: `${named} ${verb}; use ${EVENT_TYPES.join(', ')} or '*'.`,
    });
  }
  if (events.includes(ALL_EVENTS) && events.length > 1) {
    const errors = [
      {
        path: '/body/events',
        message: `"*" already means every event type: send ["*"] alone, or list the types without it`,
      },
    ];
    throw new AppError('validation_failed', { detail: validationDetail(errors), errors });
  }
}
