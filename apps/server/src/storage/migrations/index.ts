import type { Migration } from 'kysely/migration';
import * as initial from './0001-initial.js';
import * as eventsWebhooksIdempotency from './0002-events-webhooks-idempotency.js';
import * as runs from './0003-runs.js';
import * as attemptBodyReplaced from './0004-attempt-body-replaced.js';
import * as verifiableLog from './0005-transparency-log.js';
import * as logLeaves from './0006-log-leaves.js';
import * as claimDueDeliveries from './0007-claim-due-deliveries.js';
import * as fairRunClaims from './0008-fair-run-claims.js';
import * as keyScopesIdempotencyExpiry from './0009-key-scopes-idempotency-expiry.js';
import * as erasure from './0010-erasure.js';
import * as tenantUsage from './0011-tenant-usage.js';
import * as deploymentKeys from './0012-deployment-keys.js';
import * as eventTraceparent from './0013-event-traceparent.js';
import * as webhookOperations from './0014-webhook-operations.js';
import * as logFaultsRunEvents from './0015-log-faults-run-events.js';
import * as rootLog from './0016-root-log.js';
import * as ndjsonRunInputs from './0018-ndjson-run-inputs.js';
import * as claimTraceparent from './0019-claim-traceparent.js';
import * as subjectKeyPrefixIndexes from './0020-subject-key-prefix-indexes.js';
import * as erasedCidsIndex from './0021-erased-cids-index.js';
import * as packedLogRecords from './0022-packed-log-records.js';
import * as leafIndexFromTiles from './0023-leaf-index-from-tiles.js';
import * as subjectIndexOfScorings from './0024-subject-index-of-scorings.js';
import * as parkedDeliveriesIndex from './0025-parked-deliveries-index.js';
import * as tenantUndispatchedEventsIndex from './0026-tenant-undispatched-events-index.js';
import * as erasureFairnessIndexes from './0027-erasure-fairness-indexes.js';

/**
 * Every migration, in order, keyed by name. Defined in code (not read from a folder at run time) so the
 * built server and the tests run exactly the same list on SQLite and PostgreSQL. Append; never edit one
 * that has shipped.
 */
export const MIGRATIONS: Readonly<Record<string, Migration>> = {
  '0001-initial': initial,
  '0002-events-webhooks-idempotency': eventsWebhooksIdempotency,
  '0003-runs': runs,
  '0004-attempt-body-replaced': attemptBodyReplaced,
  '0005-transparency-log': verifiableLog,
  '0006-log-leaves': logLeaves,
  '0007-claim-due-deliveries': claimDueDeliveries,
  '0008-fair-run-claims': fairRunClaims,
  '0009-key-scopes-idempotency-expiry': keyScopesIdempotencyExpiry,
  '0010-erasure': erasure,
  '0011-tenant-usage': tenantUsage,
  '0012-deployment-keys': deploymentKeys,
  '0013-event-traceparent': eventTraceparent,
  '0014-webhook-operations': webhookOperations,
  '0015-log-faults-run-events': logFaultsRunEvents,
  '0016-root-log': rootLog,
  '0018-ndjson-run-inputs': ndjsonRunInputs,
  '0019-claim-traceparent': claimTraceparent,
  '0020-subject-key-prefix-indexes': subjectKeyPrefixIndexes,
  '0021-erased-cids-index': erasedCidsIndex,
  '0022-packed-log-records': packedLogRecords,
  '0023-leaf-index-from-tiles': leafIndexFromTiles,
  '0024-subject-index-of-scorings': subjectIndexOfScorings,
  '0025-parked-deliveries-index': parkedDeliveriesIndex,
  '0026-tenant-undispatched-events-index': tenantUndispatchedEventsIndex,
  '0027-erasure-fairness-indexes': erasureFairnessIndexes,
};
