import { PostgresDialect } from 'kysely';
import pg from 'pg';

const CONNECTION_TIMEOUT_MS = 5000;
const POOL_SIZE = 10;

/**
 * A PostgreSQL dialect over a `pg` Pool for `databaseUrl` (`postgres://user@host:5432/db`).
 * A connection timeout keeps `ping()` and requests from hanging forever when the server is gone.
 */
export function openPostgresDialect(databaseUrl: string): PostgresDialect {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: POOL_SIZE,
    connectionTimeoutMillis: CONNECTION_TIMEOUT_MS,
  });
  // An idle client losing its connection emits 'error' on the pool; unhandled, it would crash the process.
  // The next query gets a fresh client, and its own error if the database is still down.
  pool.on('error', () => {});
  // A client checked out when its connection dies (the backend terminated, PostgreSQL restarted or failed
  // over) emits 'error' on itself: unhandled, that too would crash the process. Its query rejects with the
  // error (a write answers 503 storage_unavailable, http/error-translation.ts), and the pool drops the
  // client when it is released.
  pool.on('connect', (client) => {
    client.on('error', () => {});
  });
  return new PostgresDialect({ pool });
}
