/**
 * @scenario-scoring/client — a typed client of the scenario-scoring API: openapi-fetch typed by the
 * contract, with auth, request ids and retries as middleware, problem types, log record and verifiable-log
 * verification (checkpoints, inclusion and consistency proofs) and webhook verification.
 */

export type { Middleware } from 'openapi-fetch';
export type * from './api-types.js';
export { API_KEY_PATTERN, assertApiKey, authMiddleware } from './auth-middleware.js';
export type { CallResult } from './call-result.js';
export {
  type ClientOptions,
  createClient,
  DEFAULT_USER_AGENT,
  type ScoringClient,
} from './client-factory.js';
export { CLIENT_VERSION } from './client-version.js';
export {
  type ErasureCallResult,
  eraseSubject,
  getErasure,
  listErasedLogCids,
  listSubjectRecords,
  type WaitForErasureOptions,
  waitForErasure,
} from './erasure-calls.js';
export { auditLog, type LogAuditOptions, type LogAuditResult } from './log-auditor.js';
export { type VerifiedProofFile, verifyProofFile } from './log-proof-file.js';
export {
  type InclusionProofFields,
  LogProofError,
  logLeafHash,
  parseVerifierKey,
  type VerifiedCheckpoint,
  verifyCheckpoint,
  verifyConsistency,
  verifyInclusion,
} from './log-proof-verifier.js';
export { computeLogCid, type LogRecordBytes, verifyLogRecord } from './log-record-verifier.js';
export { isProblem, type Problem, type ProblemCode } from './problem-guard.js';
export { getNotice, type NoticeOptions, reasonsOf } from './reasons.js';
export { randomRequestId, requestIdMiddleware } from './request-id-middleware.js';
export { backoffMs, retryAfterMs } from './retry-delay.js';
export { DEFAULT_RETRY, type RetryOptions, retryMiddleware } from './retry-middleware.js';
export {
  type NdjsonSource,
  readRunResults,
  type UploadProgress,
  uploadRunNdjson,
} from './run-ndjson.js';
export {
  fetchRunResults,
  type RunCallResult,
  type RunItem,
  submitRun,
  type WaitForRunOptions,
  waitForRun,
} from './run-polling.js';
export { isRunEndEvent, type RunEndEvent, RunEndWaiter } from './run-webhook-waiter.js';
export {
  type CallOptions,
  getPolicy,
  type RegisterWebhookBody,
  registerWebhook,
  replayWebhookEvents,
  type ScoreCallOptions,
  scoreSubject,
  type WebhookEventFilter,
} from './typed-calls.js';
export {
  fetchVerifiedLogRecord,
  type LogInclusion,
  type LogProofFailure,
  type LogRecordMismatch,
  type VerifiedLogRecordResult,
  verifyScoreInclusion,
} from './verified-log-fetch.js';
export {
  handleWebhookEvent,
  type WebhookEventHandlers,
  type WebhookEventOf,
  type WebhookEventType,
  type WebhookHandlersResult,
} from './webhook-event-handler.js';
export {
  type ReceivedHeaders,
  verifyWebhook,
  WebhookVerificationError,
  type WebhookVerificationReason,
} from './webhook-verifier.js';
