import { OutboxSignal } from './events/event-outbox.js';
import { type ApiKeyStore, createApiKeyStore } from './keys/api-key-store.js';
import { TenantKeyedHash } from './keys/tenant-keyed-hash.js';
import { createScoreLogStore, type ScoreLogStore, type SubjectKey } from './score-log/score-log-store.js';
import type { Storage } from './storage/storage.js';
import { CheckpointSignal } from './verifiable-log/checkpoint-signal.js';
import { RetiredWebhookSignal } from './webhooks/webhook-registry.js';
import { BackgroundPacer } from './workers/background-pacer.js';

/**
 * What the features of one instance share on top of its storage: the stores that outlive a request and
 * the in-process signals between features. Wired once by the runtime (and the test server), so storage/
 * imports no feature and a signal is a dependency a feature is handed, not a property of the database.
 */
export interface Features {
  readonly storage: Storage;
  /** The score log (group commit): scoring and runs append, `GET /v1/logs/{cid}` reads. */
  readonly logs: ScoreLogStore;
  /** API keys: the auth middleware finds them, the runtime and the CLI create them. */
  readonly keys: ApiKeyStore;
  /** Keyed hashes of personal data per tenant (subjects, request bodies), under the deployment's secret. */
  readonly keyedHash: TenantKeyedHash;
  /** A subject's tenant-keyed hash (`keyedHash`, purpose `subject`): the index of its rows (erasure, access). */
  readonly subjectKey: SubjectKey;
  /** Notified after events commit (a scoring, a redelivery), so this instance's delivery workers wake at once. */
  readonly outbox: OutboxSignal;
  /**
   * Notified after a webhook is deleted or disabled (by the API, or by a delivery worker for failing), so
   * this instance's delivery workers drop at once what they claimed of it and have not started.
   */
  readonly retiredWebhooks: RetiredWebhookSignal;
  /** Notified after a new run commits, so this instance's run workers claim it at once. */
  readonly runQueue: OutboxSignal;
  /** Notified after an erasure is accepted, so this instance's erasure worker takes it at once. */
  readonly erasureQueue: OutboxSignal;
  /** Notified by this instance's log sequencer after each tenant checkpoint it commits; scorings waiting for their proof listen. */
  readonly logCheckpoints: CheckpointSignal;
  /**
   * Told of every request a client waits on (the `/v1` middleware); runs' batch commits and NDJSON uploads'
   * reading and writes go through it, so they give way to those requests.
   */
  readonly backgroundPacer: BackgroundPacer;
  /** Flushes the log's pending appends. Call it before `storage.close()`. */
  close(): Promise<void>;
}

/** What the features need besides storage, and how they are tuned. */
export interface FeatureOptions {
  /** The deployment's secret (the `SECRETS_KEY` bytes): the key of every tenant-keyed hash. */
  secret: Uint8Array;
  /** The log's group commit cap (records per transaction). */
  groupCommitMaxBatch?: number | undefined;
  /** The share of the time background work may take while clients wait on requests (0.5 when absent). */
  backgroundShare?: number | undefined;
}

/** Builds the features' stores and signals on `storage`. */
export function wireFeatures(storage: Storage, options: FeatureOptions): Features {
  const outbox = new OutboxSignal();
  const keyedHash = new TenantKeyedHash(options.secret);
  const subjectKey = (tenantId: string, subject: string) => keyedHash.hash('subject', tenantId, subject);
  const logs = createScoreLogStore(storage, { maxBatch: options.groupCommitMaxBatch, outbox, subjectKey });
  return {
    storage,
    logs,
    keys: createApiKeyStore(storage.db),
    keyedHash,
    subjectKey,
    outbox,
    retiredWebhooks: new RetiredWebhookSignal(),
    runQueue: new OutboxSignal(),
    erasureQueue: new OutboxSignal(),
    logCheckpoints: new CheckpointSignal(),
    backgroundPacer: new BackgroundPacer({ share: options.backgroundShare ?? 0.5 }),
    close: () => logs.close(),
  };
}
