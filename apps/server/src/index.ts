// The server's public entry (`@scenario-scoring/server`): what the benchmarks and other workspaces may use
// to run or embed it. Everything else under dist/ is private; the package's `exports` map enforces that.

export { NoteSigner } from '@scenario-scoring/tlog';
export { type AppOptions, createApp } from './app.js';
export { type Clock, systemClock } from './common/clock.js';
export { newId } from './common/ids.js';
export { createWorkers, type WorkerDependencies } from './create-workers.js';
export { ErasureWorker } from './erasure/erasure-worker.js';
export { insertEvents, newEvent, type OutboxEvent, OutboxSignal } from './events/event-outbox.js';
export { type Features, wireFeatures } from './features.js';
export { TenantKeyedHash } from './keys/tenant-keyed-hash.js';
export { createMetrics, type Metrics } from './metrics/metrics.js';
export { jsonLogger, type Logger, silentLogger } from './request-logging/logger.js';
export { type Runtime, type RuntimeOptions, startRuntime } from './runtime.js';
export { insertLogRecords, insertLogRows } from './score-log/score-log-store.js';
export { type Config, ConfigError, loadConfig } from './server-config.js';
export { packRecord, unpackRecord } from './storage/record-codec.js';
export { DataDirInUseError, ServerLockError, ServerLockLostError } from './storage/server-lock.js';
export { openStorage, type Storage, type StorageOptions } from './storage/storage.js';
export { LogSequencer } from './verifiable-log/log-sequencer.js';
export { DEFAULT_LOG_SEQUENCER_BATCH } from './verifiable-log/verifiable-log-config.js';
export { insertNewWebhook } from './webhooks/api/webhook-store.js';
export { SecretBox } from './webhooks/outbound/secret-box.js';
export { generateWebhookSecret, webhookHeaders } from './webhooks/outbound/webhook-signature.js';
