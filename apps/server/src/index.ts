// The server's public entry (`@scenario-scoring/server`): what the benchmarks and other workspaces may use
// to run or embed it. Everything else under dist/ is private; the package's `exports` map enforces that.

export { NoteSigner } from '@scenario-scoring/tlog';
export { type AppOptions, createApp } from './app.js';
export { type Clock, systemClock } from './clock.js';
export { type Config, ConfigError, loadConfig } from './config/server-config.js';
export { insertEvents, newEvent, type OutboxEvent } from './events/event-outbox.js';
export { type Features, wireFeatures } from './features.js';
export { newId } from './ids.js';
export { jsonLogger, type Logger, silentLogger } from './logging/logger.js';
export { insertLogRows } from './logs/log-store.js';
export { createMetrics, type Metrics } from './metrics/metrics.js';
export { type Runtime, type RuntimeOptions, startRuntime } from './runtime.js';
export { openStorage, type Storage, type StorageOptions } from './storage/storage.js';
export { DEFAULT_LOG_SEQUENCER_BATCH } from './transparency-log/log-config.js';
export { LogSequencer } from './transparency-log/log-sequencer.js';
export { insertNewWebhook } from './webhooks/api/webhook-store.js';
export { SecretBox } from './webhooks/outbound/secret-box.js';
export { generateWebhookSecret, webhookHeaders } from './webhooks/outbound/webhook-signature.js';
export { createWorkers, type WorkerDependencies } from './workers/create-workers.js';
