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
}

/** The whole schema, as Kysely sees it. Later features (runs, webhooks) add their tables here. */
export interface Database {
  tenants: TenantsTable;
  api_keys: ApiKeysTable;
  log_records: LogRecordsTable;
}
