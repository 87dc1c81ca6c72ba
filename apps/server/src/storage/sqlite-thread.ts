import { Worker } from 'node:worker_threads';
import {
  CompiledQuery,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  type QueryCompiler,
  type QueryResult,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely';
import { THREAD_RESOURCE_LIMITS, threadModule } from '../server-files.js';
import { RECORD_CODECS, RECORD_PACKING } from './record-codec.js';
import type {
  OpenedMessage,
  Reply,
  SqliteError,
  SqliteThreadData,
  StatementResult,
} from './sqlite-thread-messages.js';
import {
  stepParts,
  type TransactionResults,
  type TransactionStep,
  type TransactOptions,
} from './transaction-steps.js';

/** The connection's thread: tsc's output when built, its TypeScript source under vitest. */
const THREAD_MODULE = threadModule('storage/sqlite-connection-thread');

/** Kysely's QueryResult of a statement's result. */
function queryResult<R>(result: StatementResult): QueryResult<R> {
  if ('rows' in result) return { rows: result.rows as R[] };
  return {
    insertId: result.lastInsertRowid != null ? BigInt(result.lastInsertRowid) : undefined,
    numAffectedRows: result.changes != null ? BigInt(result.changes) : undefined,
    rows: [],
  };
}

/** An error of the thread's SQLite, as node:sqlite threw it (message, code, errcode, errstr). */
function sqliteError(described: SqliteError): Error {
  const error = new Error(described.message);
  if (described.name !== undefined && described.name !== 'Error') error.name = described.name;
  return Object.assign(error, {
    ...(described.code !== undefined && { code: described.code }),
    ...(described.errcode !== undefined && { errcode: described.errcode }),
    ...(described.errstr !== undefined && { errstr: described.errstr }),
  });
}

/**
 * Bytes that view part of a larger buffer, copied to a buffer of their own. Cloning a view for another
 * thread copies its whole underlying buffer, and a small Buffer is a view on Node's shared 8 KiB pool:
 * a 1 KiB log record would cost 8 KiB a message.
 */
function compactBytes(value: unknown): unknown {
  if (value instanceof Uint8Array && value.byteLength !== value.buffer.byteLength)
    return new Uint8Array(value);
  return value;
}

/** What opening the thread's connection needs. */
export interface SqliteThreadOptions {
  file: string;
  /** Run in order right after opening, before anything else (journal mode, synchronous, busy timeout…). */
  pragmas: readonly string[];
  /** Prepared statements kept per SQL text. */
  statementCacheSize: number;
  /**
   * How long a statement waits for another connection's lock (SQLite's `busy_timeout`; none when absent):
   * another process (an operator's shell, a tool) holding the write lock. Once a statement waited this long
   * in vain, the lock is taken to be held, and every later statement waits `contendedBusyTimeoutMs` at most
   * (default 100 ms), until this connection takes the write lock again: the thread runs one statement at a
   * time, so each write queued behind the first would otherwise wait the whole timeout in turn, and every read
   * behind them (a key's lookup, a proof) as long.
   */
  busyTimeoutMs?: number;
  contendedBusyTimeoutMs?: number;
  /** Called once the file is open and its pragmas applied (the -wal and -shm files exist then). */
  onOpened?: () => void;
}

/**
 * The one connection, in its own thread. A statement is a message there and its result a message back:
 * the event loop never waits for SQLite, above all not for the disk flush of a commit (synchronous=FULL),
 * which on a slow or busy disk takes milliseconds while requests wait. Kysely's SQLite adapter says the
 * dialect has one connection, so Kysely runs one transaction at a time on it, as with an in-thread one.
 */
class SqliteThreadConnection implements DatabaseConnection {
  readonly #worker: Worker;
  readonly #pending = new Map<number, { resolve: (reply: Reply) => void; reject: (error: Error) => void }>();
  #nextId = 0;
  #failure: Error | undefined;
  /** A transaction was begun and no statement has run in it yet: its `begin` rides with the first one. */
  #beginPending = false;
  /** The `begin` sent with a statement failed: the transaction Kysely will end was never open. */
  #beginFailed = false;

  constructor(worker: Worker) {
    this.#worker = worker;
    worker.on('message', (reply: Reply | OpenedMessage) => {
      if (!('id' in reply)) return;
      const waiting = this.#pending.get(reply.id);
      if (waiting === undefined) return;
      this.#pending.delete(reply.id);
      // Only a statement in flight keeps the process alive, as any pending I/O does.
      if (this.#pending.size === 0) this.#worker.unref();
      waiting.resolve(reply);
    });
  }

  /** Fails every statement in flight and every later one (the thread died). */
  fail(error: Error): void {
    this.#failure ??= error;
    for (const waiting of this.#pending.values()) waiting.reject(this.#failure);
    this.#pending.clear();
  }

  #send(sql: string, parameters: readonly unknown[]): Promise<Reply> {
    const begin = this.#beginPending;
    this.#beginPending = false;
    return this.#post({ sql, parameters: parameters.map(compactBytes), begin });
  }

  #post(message: object): Promise<Reply> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    const id = this.#nextId++;
    return new Promise<Reply>((resolve, reject) => {
      if (this.#pending.size === 0) this.#worker.ref();
      this.#pending.set(id, { resolve, reject });
      try {
        this.#worker.postMessage({ id, ...message });
      } catch (error) {
        // Not sent (a value the thread cannot be given): nothing will answer it.
        this.#pending.delete(id);
        if (this.#pending.size === 0) this.#worker.unref();
        reject(error);
      }
    });
  }

  /**
   * Runs `steps` as one transaction in one message: the thread begins it, runs each statement (a fenced
   * one only when its fence changed a row) and commits, or rolls back and fails with the first error, as
   * `executeQuery` would have thrown it, without a round trip through the event loop between them. Not
   * inside a transaction Kysely has begun.
   */
  async executeTransaction(
    steps: readonly TransactionStep[],
    options: TransactOptions = {},
  ): Promise<TransactionResults> {
    if (this.#beginPending) throw new Error('executeTransaction inside a transaction');
    const reply = await this.#post({
      lease: options.durability === 'lease',
      ...(options.lockBy !== undefined && { lockBy: options.lockBy }),
      transaction: steps.map((step) => {
        const { query, onlyIfChanged } = stepParts(step);
        return { sql: query.sql, parameters: query.parameters.map(compactBytes), onlyIfChanged };
      }),
    });
    if ('error' in reply) {
      const error = sqliteError(reply.error);
      // Which step failed, when one did (not the begin or the commit).
      throw reply.statement === undefined ? error : Object.assign(error, { statement: reply.statement });
    }
    if (!('results' in reply)) throw new Error('the SQLite thread answered a transaction with one result');
    return reply.results.map((result) => (result === null ? undefined : queryResult(result)));
  }

  /**
   * Begins a transaction with its first statement: `begin` and that statement are one message, not two
   * round trips (a Kysely transaction of one insert is then two messages: its insert and its commit; a
   * group commit is one, see executeTransaction). The write lock is
   * taken at the same point as before, since nothing runs in between.
   */
  beginWithNextStatement(): void {
    this.#beginPending = true;
  }

  /** Ends a transaction: nothing to send when no statement ever ran in it, so nothing was begun. */
  async endTransaction(sql: 'commit' | 'rollback'): Promise<void> {
    if (this.#beginPending || this.#beginFailed) {
      this.#beginPending = false;
      this.#beginFailed = false;
      return;
    }
    await this.executeQuery(CompiledQuery.raw(sql));
  }

  async executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    const reply = await this.#send(compiledQuery.sql, compiledQuery.parameters);
    if ('error' in reply) {
      if (reply.notBegun) this.#beginFailed = true;
      throw sqliteError(reply.error);
    }
    if ('results' in reply) throw new Error('the SQLite thread answered a statement with a transaction');
    return queryResult(reply);
  }

  async *streamQuery<R>(
    compiledQuery: CompiledQuery,
    chunkSize = 100,
  ): AsyncIterableIterator<QueryResult<R>> {
    // Read whole, then handed out in chunks: nothing here streams a result too big to hold.
    const { rows } = await this.executeQuery<R>(compiledQuery);
    for (let start = 0; start < rows.length; start += chunkSize)
      yield { rows: rows.slice(start, start + chunkSize) };
  }
}

/**
 * The connection's one holder at a time, in the order they asked: Kysely's users (Kysely also serializes
 * a single-connection dialect's users itself) and `executeTransaction`'s, which do not go through Kysely.
 * A Kysely transaction is several messages, and nothing else may run between them.
 */
class ConnectionMutex {
  #last: Promise<void> = Promise.resolve();
  #release: (() => void) | undefined;

  async lock(): Promise<void> {
    const previous = this.#last;
    let release: () => void = () => {};
    this.#last = new Promise((resolve) => {
      release = resolve;
    });
    await previous;
    this.#release = release;
  }

  unlock(): void {
    const release = this.#release;
    this.#release = undefined;
    release?.();
  }
}

class SqliteThreadDriver implements Driver {
  readonly #options: SqliteThreadOptions;
  #worker: Worker | undefined;
  #connection: SqliteThreadConnection | undefined;
  #exited: Promise<void> | undefined;
  readonly #mutex = new ConnectionMutex();

  constructor(options: SqliteThreadOptions) {
    this.#options = options;
  }

  async init(): Promise<void> {
    const workerData: SqliteThreadData = {
      file: this.#options.file,
      pragmas: [...this.#options.pragmas],
      statementCacheSize: this.#options.statementCacheSize,
      ...(this.#options.busyTimeoutMs !== undefined && { busyTimeoutMs: this.#options.busyTimeoutMs }),
      ...(this.#options.contendedBusyTimeoutMs !== undefined && {
        contendedBusyTimeoutMs: this.#options.contendedBusyTimeoutMs,
      }),
      recordCodecs: RECORD_CODECS,
      recordPacking: RECORD_PACKING,
    };
    const worker = new Worker(THREAD_MODULE, { workerData, resourceLimits: THREAD_RESOURCE_LIMITS });
    this.#worker = worker;
    this.#exited = new Promise((resolve) => worker.once('exit', () => resolve()));
    const connection = new SqliteThreadConnection(worker);
    this.#connection = connection;
    worker.on('error', (error) => connection.fail(error));
    worker.once('exit', (code) =>
      connection.fail(new Error(`the SQLite thread stopped (exit code ${code})`)),
    );
    const opened = await new Promise<OpenedMessage>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    if (!opened.opened) {
      await this.#exited;
      throw sqliteError(opened.error ?? { message: 'the SQLite thread could not open the database' });
    }
    worker.unref();
    this.#options.onOpened?.();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const connection = this.#started();
    await this.#mutex.lock();
    return connection;
  }

  /** See SqliteThreadConnection.executeTransaction; waits for the connection like any Kysely query, and lets it go once posted. */
  async executeTransaction(
    steps: readonly TransactionStep[],
    options?: TransactOptions,
  ): Promise<TransactionResults> {
    const connection = this.#started();
    await this.#mutex.lock();
    let reply: Promise<TransactionResults>;
    try {
      // Posted while the connection is held: it cannot fall between the messages of a Kysely transaction.
      reply = connection.executeTransaction(steps, options);
    } finally {
      // Released once posted, not once answered: the thread runs its messages in the order they were
      // posted, and this one is a whole transaction, so whatever is posted next runs after it anyway. The
      // thread then goes on to the next holder's work at once, instead of idling until the event loop has
      // taken this answer (milliseconds under load, on every group commit).
      this.#mutex.unlock();
    }
    return reply;
  }

  #started(): SqliteThreadConnection {
    if (this.#connection === undefined) throw new Error('the SQLite thread is not started');
    return this.#connection;
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    (connection as SqliteThreadConnection).beginWithNextStatement();
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as SqliteThreadConnection).endTransaction('commit');
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as SqliteThreadConnection).endTransaction('rollback');
  }

  async releaseConnection(): Promise<void> {
    this.#mutex.unlock();
  }

  /** Closes the connection in its thread and waits for the thread to end. */
  async destroy(): Promise<void> {
    const worker = this.#worker;
    if (worker === undefined) return;
    this.#worker = undefined;
    worker.ref();
    worker.postMessage({ close: true });
    await this.#exited;
  }
}

/** Kysely's SQLite adapter says DDL is not transactional; SQLite's is, so migrations run in one transaction. */
class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

/** Kysely's SQLite dialect, with the connection in a thread of its own (see SqliteThreadConnection). */
export class SqliteThreadDialect implements Dialect {
  readonly #options: SqliteThreadOptions;
  #driver: SqliteThreadDriver | undefined;

  constructor(options: SqliteThreadOptions) {
    this.#options = options;
  }

  createDriver(): Driver {
    this.#driver = new SqliteThreadDriver(this.#options);
    return this.#driver;
  }

  /**
   * Runs `steps` as one transaction, sent to the thread as one message (begin, each statement,
   * commit): for writes known up front, such as a group commit, whose commit then does not wait for the
   * event loop to hand the thread its next statement. Rejects with the first statement's error, nothing
   * of the transaction kept. Only once the Kysely instance made with this dialect has run a query (the
   * migrations do).
   */
  executeTransaction(
    steps: readonly TransactionStep[],
    options?: TransactOptions,
  ): Promise<TransactionResults> {
    if (this.#driver === undefined) return Promise.reject(new Error('the SQLite dialect has no driver yet'));
    return this.#driver.executeTransaction(steps, options);
  }

  createQueryCompiler(): QueryCompiler {
    return new SqliteQueryCompiler();
  }

  createAdapter(): DialectAdapter {
    return new TransactionalDdlSqliteAdapter();
  }

  // biome-ignore lint/suspicious/noExplicitAny: Kysely's own dialects take Kysely<any> here.
  createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    return new SqliteIntrospector(db);
  }
}
