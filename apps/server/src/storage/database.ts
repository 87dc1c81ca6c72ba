import type { ColumnType } from 'kysely';

/**
 * Timestamps are stored as ISO-8601 UTC text (`2025-01-31T12:00:00.000Z`) on both SQLite and PostgreSQL:
 * portable, sortable as text, readable in a shell.
 */
export type IsoTimestamp = string;

/** A tenant: the owner of API keys and of everything scored with them. */
export interface TenantsTable {
  id: string;
  created_at: IsoTimestamp;
}

/** An API key, stored only as the SHA-256 hex of the plaintext. */
export interface ApiKeysTable {
  id: string;
  tenant_id: string;
  key_hash: string;
  /** What the key may do: `full` or `log:read` (keys/key-scope.ts); `full` for keys from before scopes. */
  scope: ColumnType<string, string | undefined, string>;
  created_at: IsoTimestamp;
  revoked_at: ColumnType<IsoTimestamp | null, IsoTimestamp | null | undefined, IsoTimestamp | null>;
}

/** A score log record: canonical bytes addressed by their CID, per tenant. */
export interface LogRecordsTable {
  tenant_id: string;
  cid: string;
  bytes: Uint8Array;
  request_id: string;
  created_at: IsoTimestamp;
  /** The tenant-keyed hash of the record's subject (migration 0010); null for rows from before it and once erased. */
  subject_key: ColumnType<string | null, string | null | undefined, string | null>;
  /** The erasure that emptied `bytes` (the leaf stays); null while the record is whole. */
  erasure_id: ColumnType<string | null, string | null | undefined, string | null>;
}

/** A leaf of a tenant's verifiable log: the record (created_at, `cid`) is leaf `leaf_index` (bigint: a string on PostgreSQL). Written once. */
export interface LogLeavesTable {
  tenant_id: string;
  /** The record's created_at: with the tenant and CID, the key (the order leaves are appended in). */
  created_at: IsoTimestamp;
  cid: string;
  leaf_index: ColumnType<number | string, number, never>;
}

/**
 * A record waiting for its leaf, queued by its commit, in the order the sequencer takes them (created_at,
 * CID), with its RFC 9162 leaf hash; the sequencer deletes it in the transaction that inserts the leaf.
 */
export interface LogLeafQueueTable {
  tenant_id: string;
  created_at: IsoTimestamp;
  cid: string;
  leaf_hash: Uint8Array;
}

/** The tenant's Merkle tree hashes as C2SP tlog-tiles: `width` hashes of tile level `level` (see verifiable-log/). */
export interface LogTilesTable {
  tenant_id: string;
  level: number;
  tile_index: ColumnType<number | string, number, never>;
  width: number;
  hashes: Uint8Array;
}

/** A signed checkpoint (C2SP tlog-checkpoint as a signed note) of a tenant's log. */
export interface LogCheckpointsTable {
  tenant_id: string;
  tree_size: ColumnType<number | string, number, never>;
  root_hash: Uint8Array;
  note: string;
  created_at: IsoTimestamp;
}

/** A tenant checkpoint waiting for its root log leaf (queued by a trigger on log_checkpoints). */
export interface RootLogQueueTable {
  created_at: IsoTimestamp;
  tenant_id: string;
  tree_size: ColumnType<number | string, number, never>;
}

/** A root log leaf: the tenant checkpoint (tenant, tree size) it is the SHA-256 of. */
export interface RootLogLeavesTable {
  leaf_index: ColumnType<number | string, number, never>;
  tenant_id: string;
  tree_size: ColumnType<number | string, number, never>;
}

/** The root log's tiles, as log_tiles without a tenant. */
export interface RootLogTilesTable {
  level: number;
  tile_index: ColumnType<number | string, number, never>;
  width: number;
  hashes: Uint8Array;
}

/** A signed root checkpoint (origin LOG_ORIGIN). */
export interface RootLogCheckpointsTable {
  tree_size: ColumnType<number | string, number, never>;
  root_hash: Uint8Array;
  note: string;
  created_at: IsoTimestamp;
}

/** A witness's cosignature line of a root checkpoint. */
export interface RootLogCosignaturesTable {
  tree_size: ColumnType<number | string, number, never>;
  witness: string;
  line: string;
  created_at: IsoTimestamp;
}

/** 0 or 1: booleans are integers on both dialects. */
export type Flag = 0 | 1;

/** The event outbox: one row per event, written in the transaction of the change that raised it. */
export interface EventsTable {
  /** `evt_…`: the `webhook-id` of every delivery of this event. */
  id: string;
  tenant_id: string;
  type: string;
  /** The exact JSON body every delivery sends: `{"id","type","timestamp","data"}`. */
  payload: string;
  created_at: IsoTimestamp;
  /** The tenant-keyed hash of the subject a `policy.escalated` event carries; null otherwise and once erased. */
  subject_key: ColumnType<string | null, string | null | undefined, string | null>;
  /** When deliveries were created for it (fanned out to the tenant's webhooks); null until then. */
  dispatched_at: ColumnType<IsoTimestamp | null, IsoTimestamp | null | undefined, IsoTimestamp | null>;
  /** The W3C traceparent of the request that raised it, when tracing was on; deliveries link to it. */
  traceparent: ColumnType<string | null, string | null | undefined, string | null>;
}

/** A registered webhook endpoint. */
export interface WebhooksTable {
  id: string;
  tenant_id: string;
  url: string;
  /** JSON array of event types, or `["*"]`. */
  events: string;
  description: string | null;
  status: 'active' | 'disabled';
  disabled_reason: 'endpoint_gone' | 'failing' | 'manual' | null;
  /** The first failure since the last success; 5 days of that disables the webhook. */
  failing_since: IsoTimestamp | null;
  created_at: IsoTimestamp;
  updated_at: IsoTimestamp;
  /** Soft delete: a deleted webhook answers 404 and receives nothing. */
  deleted_at: ColumnType<IsoTimestamp | null, IsoTimestamp | null | undefined, IsoTimestamp | null>;
  /** The most attempts per second it receives; null: no cap. */
  max_deliveries_per_second: ColumnType<number | null, number | null | undefined, number | null>;
  /** When its next attempt may start under its cap (Unix ms; bigint: read it through Number()). */
  rate_next_at_ms: ColumnType<number | null, number | null | undefined, number | null>;
}

/** A webhook's signing secrets, encrypted; the current one has `expires_at` null. */
export interface WebhookSecretsTable {
  id: string;
  webhook_id: string;
  /** AES-256-GCM ciphertext of the `whsec_…` secret (see webhooks/outbound/secret-box.ts). */
  ciphertext: string;
  created_at: IsoTimestamp;
  expires_at: IsoTimestamp | null;
}

/** The delivery of one event to one webhook, across its attempts. */
export interface DeliveriesTable {
  id: string;
  tenant_id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  status: 'pending' | 'succeeded' | 'failed' | 'cancelled';
  attempt_count: ColumnType<number, number | undefined, number>;
  /** Scheduled attempts that failed: the position in the retry schedule. */
  failed_scheduled_attempts: ColumnType<number, number | undefined, number>;
  next_attempt_at: IsoTimestamp | null;
  /** Whether the next attempt is a `scheduled` retry or a `manual` redelivery. */
  next_trigger: ColumnType<
    'scheduled' | 'manual',
    'scheduled' | 'manual' | undefined,
    'scheduled' | 'manual'
  >;
  last_attempt_at: ColumnType<IsoTimestamp | null, IsoTimestamp | null | undefined, IsoTimestamp | null>;
  /** A worker's claim: nobody else attempts the delivery before this time. */
  locked_until: ColumnType<IsoTimestamp | null, IsoTimestamp | null | undefined, IsoTimestamp | null>;
  locked_by: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: IsoTimestamp;
  updated_at: IsoTimestamp;
}

/** One HTTP attempt of a delivery. */
export interface DeliveryAttemptsTable {
  id: string;
  delivery_id: string;
  attempted_at: IsoTimestamp;
  /** 0 when no response came. */
  status_code: number;
  duration_ms: number;
  error: string | null;
  /** The first 1 KiB of the response body (4 KB for attempts before migration 0011). */
  response_body: string | null;
  /** 1 when the body received was longer than what is stored (cut at 1 KiB). */
  response_body_truncated: ColumnType<number, number | undefined, number>;
  /** 1 when the stored body differs from the bytes received (invalid UTF-8 or NUL became U+FFFD). */
  response_body_replaced: ColumnType<number, number | undefined, number>;
  trigger: 'scheduled' | 'manual';
}

/** The first response to an `Idempotency-Key`, replayed for 24 hours. */
export interface IdempotencyKeysTable {
  api_key_id: string;
  key: string;
  /** The operationId the key was used with. */
  operation: string;
  /** SHA-256 hex of the operation and the canonical request body. */
  request_hash: string;
  response_status: number;
  /** JSON object of the response headers to replay (Location). */
  response_headers: string;
  response_body: string;
  created_at: IsoTimestamp;
}

/** A batch scoring run; its items are kept as submitted, its results in `run_items`. */
export interface RunsTable {
  /** `run_…`. */
  id: string;
  tenant_id: string;
  /** `uploading` while an NDJSON body arrives (never shown, never claimed; see migration 0018). */
  status: 'uploading' | 'queued' | 'running' | 'completed' | 'failed';
  item_count: number;
  /** Where the items are: `inline` in `items`, or `ndjson` in `run_inputs` (migration 0018). */
  input: ColumnType<'inline' | 'ndjson', 'inline' | 'ndjson' | undefined, 'inline' | 'ndjson'>;
  /** JSON array of the submitted items, `[{subject, context}]`, as validated at creation. */
  items: string;
  /** The first item whose result is not committed yet: where a resumed run starts. */
  next_index: ColumnType<number, number | undefined, number>;
  succeeded: ColumnType<number, number | undefined, number>;
  failed: ColumnType<number, number | undefined, number>;
  escalated: ColumnType<number, number | undefined, number>;
  created_at: IsoTimestamp;
  started_at: ColumnType<IsoTimestamp | null, IsoTimestamp | null | undefined, IsoTimestamp | null>;
  completed_at: ColumnType<IsoTimestamp | null, IsoTimestamp | null | undefined, IsoTimestamp | null>;
  deadline_at: IsoTimestamp | null;
  /** JSON problem that failed the run; null unless `failed`. */
  error: ColumnType<string | null, string | null | undefined, string | null>;
  /** A worker's claim: nobody else processes the run before this time. */
  locked_until: ColumnType<IsoTimestamp | null, IsoTimestamp | null | undefined, IsoTimestamp | null>;
  locked_by: ColumnType<string | null, string | null | undefined, string | null>;
  /**
   * How many claims of it ended without a release (a crash or a lost lease), the current one included: a
   * release gives its claim back. With `locked_by` it fences a claim's writes.
   */
  claims: ColumnType<number, number | undefined, number>;
  /** 1 while the completed run's `run.completed` waits for every item's record to be signed (runs/run-log-completion.ts). */
  log_event_pending: ColumnType<number, number | undefined, number>;
}

/** The outcome of one attempted item of a run, written in its batch's transaction. */
/** A line of an NDJSON run not scored yet (migration 0018): the item as validated, or why it fails. */
export interface RunInputsTable {
  run_id: string;
  item_index: number;
  /** The line's subject when it had a valid one (an `error` row may have none). */
  subject: string | null;
  /** The item `{subject, context}` as JSON; null when the line is not a valid item. */
  item: string | null;
  /** The problem (JSON) the item fails with; null for a valid item. */
  error: string | null;
}

export interface RunItemsTable {
  run_id: string;
  item_index: number;
  subject: string;
  status: 'ok' | 'error';
  /** The item's log record (under the run's tenant), which holds its result; null when it failed. */
  log_cid: string | null;
  escalated: Flag;
  /** JSON problem when the item failed. */
  error: string | null;
  /** The tenant-keyed hash of `subject` (migration 0010); null for rows from before it and once erased. */
  subject_key: ColumnType<string | null, string | null | undefined, string | null>;
  /** The erasure that replaced `subject` (and emptied the item's record); null otherwise. */
  erasure_id: ColumnType<string | null, string | null | undefined, string | null>;
}

/** An erasure (by subject, or by retention): its durable to-do and, once completed, its account. */
export interface ErasuresTable {
  /** `era_…`. */
  id: string;
  tenant_id: string;
  kind: 'subject' | 'retention';
  status: 'pending' | 'completed';
  /** The subject, kept only until the erasure completes (null after). */
  subject: string | null;
  /** The subject's tenant-keyed hash, kept only until the erasure completes. */
  subject_key: string | null;
  /** Kind `retention`: records created before this time are erased. */
  before: string | null;
  /** When the erasure began: records of the subject created up to this time are erased. */
  created_at: IsoTimestamp;
  erased_at: ColumnType<IsoTimestamp | null, IsoTimestamp | null | undefined, IsoTimestamp | null>;
  completed_at: ColumnType<IsoTimestamp | null, IsoTimestamp | null | undefined, IsoTimestamp | null>;
  log_records: ColumnType<number, number | undefined, number>;
  run_items: ColumnType<number, number | undefined, number>;
  run_inputs: ColumnType<number, number | undefined, number>;
  events: ColumnType<number, number | undefined, number>;
  delivery_attempts: ColumnType<number, number | undefined, number>;
  idempotency_answers: ColumnType<number, number | undefined, number>;
  /** Where the worker is: `<phase>` or `<phase>:<cursor>`. */
  progress: ColumnType<string, string | undefined, string>;
  locked_until: ColumnType<IsoTimestamp | null, IsoTimestamp | null | undefined, IsoTimestamp | null>;
  locked_by: ColumnType<string | null, string | null | undefined, string | null>;
}

/** The bytes a tenant has stored, counted by the transactions that store them (quota/tenant-usage.ts). */
export interface TenantUsageTable {
  tenant_id: string;
  /** A bigint: a string on PostgreSQL. */
  bytes: ColumnType<number | string, number, number>;
  updated_at: IsoTimestamp;
}

/** A check value of a key every instance on the database must share (see storage/deployment-keys.ts). */
export interface DeploymentKeysTable {
  /** `secrets_key` or `log_verifier_key`. */
  name: string;
  /** The HMAC check value of `SECRETS_KEY`, or the log's public verifier key. */
  value: string;
  created_at: IsoTimestamp;
}

/** A fault the log sequencer's self-check found: the tenant's stored hashes disagree with its last signed checkpoint. */
export interface LogFaultsTable {
  tenant_id: string;
  detected_at: IsoTimestamp;
  /** The size of the last signed checkpoint the stored hashes were checked against. */
  tree_size: ColumnType<number | string, number, number>;
  /** The leaves [first_index, end_index) hold an altered hash (as narrowed by the earlier checkpoints). */
  first_index: ColumnType<number | string, number, number>;
  end_index: ColumnType<number | string, number, number>;
  /** What did not match, for the operator (logs and the CLI; never in a public answer). */
  reason: string;
  /** When an operator cleared it (`cli.js clear-log-fault`); null while it stops the tenant's sequencing. */
  cleared_at: ColumnType<IsoTimestamp | null, IsoTimestamp | null | undefined, IsoTimestamp | null>;
}

/** The whole schema, as Kysely sees it. */
export interface Database {
  tenants: TenantsTable;
  api_keys: ApiKeysTable;
  log_records: LogRecordsTable;
  events: EventsTable;
  webhooks: WebhooksTable;
  webhook_secrets: WebhookSecretsTable;
  deliveries: DeliveriesTable;
  delivery_attempts: DeliveryAttemptsTable;
  idempotency_keys: IdempotencyKeysTable;
  runs: RunsTable;
  run_items: RunItemsTable;
  run_inputs: RunInputsTable;
  log_leaves: LogLeavesTable;
  log_leaf_queue: LogLeafQueueTable;
  log_tiles: LogTilesTable;
  log_checkpoints: LogCheckpointsTable;
  root_log_queue: RootLogQueueTable;
  root_log_leaves: RootLogLeavesTable;
  root_log_tiles: RootLogTilesTable;
  root_log_checkpoints: RootLogCheckpointsTable;
  root_log_cosignatures: RootLogCosignaturesTable;
  erasures: ErasuresTable;
  tenant_usage: TenantUsageTable;
  deployment_keys: DeploymentKeysTable;
  log_faults: LogFaultsTable;
}
