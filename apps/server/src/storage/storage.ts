import type { Kysely } from 'kysely';
import type { OutboxEvent, OutboxSignal } from '../events/event-outbox.js';
import type { Database } from './database.js';
import type { GroupCommitStats } from './group-committer.js';

export type { Database } from './database.js';
export type { GroupCommitStats } from './group-committer.js';

/** A score log record as the storage layer keeps it. */
export interface StoredLogRecord {
  tenantId: string;
  cid: string;
  bytes: Uint8Array;
  requestId: string;
  createdAt: Date;
  /** Events the scoring raised (`policy.escalated`), committed in the record's transaction. */
  events?: readonly OutboxEvent[];
}

/** Who an API key belongs to. */
export interface ApiKeyOwner {
  tenantId: string;
  keyId: string;
}

/** The server's persistence: one Kysely query layer over SQLite (embedded default) or PostgreSQL. */
export interface Storage {
  readonly kind: 'sqlite' | 'postgres';
  /** The one query layer, for every feature's own queries. */
  readonly db: Kysely<Database>;
  /** Notify it after committing events, so this instance's delivery workers wake at once. */
  readonly outbox: OutboxSignal;
  /** Notify it after committing a new run, so this instance's run workers claim it at once. */
  readonly runQueue: OutboxSignal;
  /** Where the data lives, for the start-up log: the SQLite file, or the PostgreSQL URL without password. */
  readonly location: string;
  /** Counters of the log's group commit: `flushes` is the number of transactions (and disk flushes). */
  readonly logCommitStats: GroupCommitStats;
  /** Resolves once the record (and its events) is durably committed (flushed to disk); concurrent appends share one transaction and one flush. Idempotent on (tenantId, cid). */
  appendLogRecord(record: StoredLogRecord): Promise<void>;
  /** The record's bytes (a Buffer, so `res.send` sends them unchanged), or undefined when this tenant has no record with this CID. */
  getLogRecord(tenantId: string, cid: string): Promise<Uint8Array | undefined>;
  /** Creates a key (`sk_` + 40 base62 chars) for the tenant, creating the tenant if missing; stores only sha256(key). */
  createApiKey(tenantId: string): Promise<{ key: string; keyId: string }>;
  /** Looks a key up by its hash (so no timing leak on the plaintext); hits are cached in a bounded LRU. */
  findApiKey(key: string): Promise<ApiKeyOwner | undefined>;
  /** Revokes a key; true when it was active. Later lookups refuse it (at once in this process). */
  revokeApiKey(keyId: string): Promise<boolean>;
  /** Number of usable API keys (revoked ones not counted). */
  countApiKeys(): Promise<number>;
  /** True when the database answers. */
  ping(): Promise<boolean>;
  /** Flushes pending appends, then closes the database. */
  close(): Promise<void>;
}

/** How to open the storage: SQLite in `dataDir` unless `databaseUrl` names a PostgreSQL database. */
export interface StorageOptions {
  dataDir: string;
  databaseUrl?: string | undefined;
  groupCommitMaxBatch?: number;
}

export { openStorage } from './open-storage.js';
