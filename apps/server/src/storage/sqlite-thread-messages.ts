/**
 * The messages between the SQLite connection's thread (sqlite-connection-thread.ts) and its driver
 * (sqlite-thread.ts). Types only: the thread imports them as types, so that Node can run its TypeScript
 * source as it is under vitest.
 */

/** What opening the connection's thread needs, as its `workerData`. */
export interface SqliteThreadData {
  file: string;
  /** Run in order right after opening, before anything else. */
  pragmas: string[];
  /** Prepared statements kept per SQL text. */
  statementCacheSize: number;
  /** How long a statement waits for another connection's lock (see SqliteThreadOptions). */
  busyTimeoutMs?: number;
  /** The wait once a statement waited `busyTimeoutMs` in vain, until this connection takes the lock again. */
  contendedBusyTimeoutMs?: number;
  /**
   * The inflate options of each record codec by its first byte (storage/record-codec.ts), so that
   * `log_leaf_hash` hashes a packed record's own bytes: this thread imports only Node's modules (and
   * reused-zlib.ts, which does too).
   */
  recordCodecs: Record<number, import('node:zlib').ZlibOptions>;
  /** How `log_record_pack` packs a record: the codec's first byte and its deflate (`RECORD_PACKING`). */
  recordPacking: { codec: number; deflate: import('node:zlib').ZlibOptions };
}

/** An error of the thread's SQLite, described for the message back (an Error loses its own fields there). */
export interface SqliteError {
  message: string;
  name?: string;
  code?: string;
  errcode?: number;
  errstr?: string;
}

/** The thread's first message: whether the file is open and its pragmas applied. */
export interface OpenedMessage {
  opened: boolean;
  error?: SqliteError;
}

/** One statement of a transaction sent whole; with `onlyIfChanged`, run only when that statement changed a row. */
export interface TransactionStatement {
  sql: string;
  parameters: unknown[];
  onlyIfChanged?: number;
}

/** What the driver sends: one statement (with the transaction's `begin` when it is its first), a whole transaction, or close. */
export type ThreadRequest =
  | { close: true }
  | { id: number; transaction: TransactionStatement[]; lease: boolean; lockBy?: number }
  | { id: number; sql: string; parameters: unknown[]; begin: boolean };

/** What one statement gave: its rows, or its changes. */
export type StatementResult =
  | { rows: Record<string, unknown>[] }
  | { changes: number | bigint; lastInsertRowid: number | bigint };

/** The thread's answer to a statement or a transaction. */
export type Reply =
  | ({ id: number } & StatementResult)
  | { id: number; results: (StatementResult | null)[] }
  | { id: number; error: SqliteError; notBegun?: true; statement?: number };

/** What the checkpoint thread (sqlite-checkpoint-thread.ts) needs, as its `workerData`. */
export interface CheckpointThreadData {
  file: string;
  intervalMs: number;
}
