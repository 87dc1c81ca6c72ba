import type { ErrorCode } from '@scenario-scoring/api-types';

/** The fixed HTTP status and title of each error code (the contract's error guide). */
export const ERROR_CODES = {
  validation_failed: { status: 400, title: 'Request validation failed' },
  malformed_json: { status: 400, title: 'Malformed JSON' },
  missing_api_key: { status: 401, title: 'API key missing' },
  invalid_api_key: { status: 401, title: 'API key invalid' },
  insufficient_scope: { status: 403, title: 'Insufficient scope' },
  quota_exceeded: { status: 403, title: 'Quota exceeded' },
  not_found: { status: 404, title: 'Not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  idempotency_key_reused: { status: 422, title: 'Idempotency key reused' },
  idempotent_replay_unavailable: { status: 409, title: 'Idempotent replay unavailable' },
  unknown_event_type: { status: 422, title: 'Unknown event type' },
  webhook_url_refused: { status: 422, title: 'Webhook URL refused' },
  webhook_limit_reached: { status: 422, title: 'Webhook limit reached' },
  rate_limited: { status: 429, title: 'Rate limited' },
  internal_error: { status: 500, title: 'Internal error' },
  service_unavailable: { status: 503, title: 'Service unavailable' },
  run_deadline_exceeded: { status: 504, title: 'Run deadline exceeded' },
  storage_unavailable: { status: 503, title: 'Storage unavailable' },
  checkpoint_not_found: { status: 404, title: 'Checkpoint not found' },
  log_record_not_sequenced: { status: 409, title: 'Log record not sequenced' },
  log_record_erased: { status: 410, title: 'Log record erased' },
  tree_size_too_small: { status: 422, title: 'Tree size too small' },
  malformed_request: { status: 400, title: 'Malformed request' },
  headers_too_large: { status: 431, title: 'Headers too large' },
  request_timeout: { status: 408, title: 'Request timeout' },
  expectation_failed: { status: 417, title: 'Expectation failed' },
  unknown_jurisdiction: { status: 422, title: 'Unknown jurisdiction' },
  notice_unavailable: { status: 422, title: 'Notice unavailable' },
} as const satisfies Record<ErrorCode, { status: number; title: string }>;

export type { ErrorCode };
