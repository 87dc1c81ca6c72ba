import type { EnvReader } from '../config/env-reader.js';

/** `LOG_SEQUENCER_BATCH`'s default: a batch of it holds the SQLite connection for a few milliseconds. */
export const DEFAULT_LOG_SEQUENCER_BATCH = 4096;

/** The verifiable log: who it claims to be, how it signs, how often it sequences. */
export interface VerifiableLogConfig {
  /** Prefix of every tenant's origin line: `<origin>/<tenant>`. */
  origin: string;
  /** The signed-note key name in every signature line and in the verifier key. */
  keyName: string;
  /** Base64 of the 32-byte Ed25519 private key; undefined means the key file in DATA_DIR. */
  signingKey: string | undefined;
  /** How often the sequencer gives new records their indexes and signs a checkpoint per grown tree. */
  checkpointIntervalMs: number;
  /**
   * The most leaves one batch sequences for a tenant (one checkpoint each): after a round in which a batch
   * was full, the next round starts at once (not after the interval), every tenant taking its turn again.
   * So one tenant's backlog cannot hold the others back, and no batch holds the database long.
   */
  maxBatch: number;
  /**
   * The longest a scoring asking `Prefer: log-inclusion` waits for its record's signed checkpoint (and the
   * wait when it names none): past it, the answer goes out without the proof.
   */
  inclusionMaxWaitMs: number;
}

/**
 * Reads `LOG_ORIGIN` (localhost/scenario-scoring), `LOG_KEY_NAME` (the origin), `LOG_SIGNING_KEY` (required
 * with DATABASE_URL, so every instance signs with one key), `LOG_CHECKPOINT_INTERVAL` (1s),
 * `LOG_SEQUENCER_BATCH` (4096) and `LOG_INCLUSION_MAX_WAIT` (5s; more than 60s is taken as 60s).
 */
export function readVerifiableLogConfig(
  reader: EnvReader,
  context: { databaseUrl: string | undefined },
): VerifiableLogConfig {
  const origin = reader.text('LOG_ORIGIN', 'localhost/scenario-scoring');
  const keyName = reader.text('LOG_KEY_NAME', origin);
  if (!/^[^\s+]+$/.test(origin)) reader.problems.push('LOG_ORIGIN must have no spaces and no "+"');
  if (!/^[^\s+]+$/.test(keyName)) reader.problems.push('LOG_KEY_NAME must have no spaces and no "+"');
  const signingKey = reader.raw('LOG_SIGNING_KEY');
  if (signingKey !== undefined && Buffer.from(signingKey, 'base64').length !== 32) {
    reader.problems.push(
      'LOG_SIGNING_KEY must be the base64 of a 32-byte Ed25519 private key (openssl rand -base64 32)',
    );
  }
  if (signingKey === undefined && context.databaseUrl !== undefined) {
    reader.problems.push(
      'LOG_SIGNING_KEY is required with DATABASE_URL: every instance must sign the log with the same key (openssl rand -base64 32)',
    );
  }
  return {
    origin,
    keyName,
    signingKey,
    checkpointIntervalMs: reader.durationMs('LOG_CHECKPOINT_INTERVAL', 1000, 1),
    maxBatch: reader.integer('LOG_SEQUENCER_BATCH', DEFAULT_LOG_SEQUENCER_BATCH, 1, 10_000_000),
    inclusionMaxWaitMs: Math.min(reader.durationMs('LOG_INCLUSION_MAX_WAIT', 5000, 0), 60_000),
  };
}
