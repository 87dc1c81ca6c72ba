/**
 * Types of the scenario-scoring API, generated from the contract: `paths`, `components`,
 * `operations`, `webhooks`, and a named alias for every schema (`ScoreRequest`, `Problem`, …).
 */
export type * from './generated/openapi.js';

import type { components, operations } from './generated/openapi.js';

/** The operation ids of the contract. */
export type OperationId = keyof operations;

/** The payload of each event type, keyed by `type`, as declared in the contract's `webhooks:` section. */
export interface EventPayloads {
  'run.completed': components['schemas']['RunCompletedEvent'];
  'run.failed': components['schemas']['RunFailedEvent'];
  'policy.escalated': components['schemas']['PolicyEscalatedEvent'];
  'webhook.test': components['schemas']['WebhookTestEvent'];
  'subject.erased': components['schemas']['SubjectErasedEvent'];
  'webhook.disabled': components['schemas']['WebhookDisabledEvent'];
  'delivery.exhausted': components['schemas']['DeliveryExhaustedEvent'];
}

/** Any event a webhook receives. */
export type WebhookEvent = EventPayloads[keyof EventPayloads];
