import type { CompiledQuery, QueryResult } from 'kysely';
import type { Storage } from './open-storage.js';

/**
 * Runs one write with lease durability: on SQLite its commit is not flushed to disk (`synchronous =
 * NORMAL`, in WAL mode); the next commit at the connection's own `synchronous = FULL` flushes it along with
 * everything before it, since the WAL is written in order. For writes nothing is acknowledged on: a
 * worker's lease on a delivery or a run. Such a write still survives kill -9 (it is in the WAL); only a
 * power loss or an OS crash can undo it, and then the worker that held the lease is gone too, and the row
 * is simply claimable again, as when a lease expires. It saves a disk flush (milliseconds on a busy disk)
 * per claim on the one connection, which every other statement waits behind. On PostgreSQL the write runs
 * as is: its commits share WAL flushes with other connections' and hold up nothing else.
 *
 * On SQLite it is one message to the connection's thread (see Storage.transact): NORMAL, the write in its
 * own transaction, FULL again even when the write failed. So it holds the connection for no round trip
 * through the event loop, and no other statement (an acknowledged commit above all) runs under NORMAL.
 */
export async function leaseWrite<R>(
  storage: Pick<Storage, 'transact'>,
  query: CompiledQuery<R>,
): Promise<QueryResult<R>> {
  const [result] = await storage.transact([query], { durability: 'lease' });
  return result as QueryResult<R>;
}
