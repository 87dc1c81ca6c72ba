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
  return new PostgresDialect({ pool });
}
