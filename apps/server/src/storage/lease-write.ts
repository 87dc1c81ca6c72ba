import { type Kysely, sql } from 'kysely';
import type { Database } from './database.js';

/**
 * Runs `write` (one statement, or a transaction it opens itself) on the connection held exclusively, with
 * lease durability: on SQLite its commit is not flushed to disk (`synchronous = NORMAL`, in WAL mode); the
 * next commit at the connection's own `synchronous = FULL` flushes it along with everything before it, since
 * the WAL is written in order. For writes nothing is acknowledged on: a worker's lease on a delivery or a
 * run. Such a write still survives kill -9 (it is in the WAL); only a power loss or an OS crash can undo
 * it, and then the worker that held the lease is gone too, and the row is simply claimable again, as when
 * a lease expires. It saves a disk flush (milliseconds on a busy disk) per claim on the one connection,
 * which every other statement waits behind. On PostgreSQL the write runs as is: its commits share WAL
 * flushes with other connections' and hold up nothing else.
 *
 * The connection is held for the whole call, so no other query (an acknowledged commit above all) runs
 * under NORMAL; FULL is set back even when `write` fails.
 */
export async function withLeaseDurability<T>(
  storage: { readonly db: Kysely<Database>; readonly kind: 'sqlite' | 'postgres' },
  write: (db: Kysely<Database>) => Promise<T>,
): Promise<T> {
  if (storage.kind !== 'sqlite') return write(storage.db);
  return storage.db.connection().execute(async (connection) => {
    await sql`pragma synchronous = normal`.execute(connection);
    try {
      return await write(connection);
    } finally {
      await sql`pragma synchronous = full`.execute(connection);
    }
  });
}
