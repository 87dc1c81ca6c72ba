/** SQLite's primary result codes for a database another connection holds (`SQLITE_BUSY`, `SQLITE_LOCKED`). */
const SQLITE_BUSY_CODES = new Set([5, 6]);

/**
 * PostgreSQL's SQLSTATEs for a database that cannot take the write now: a lock not granted in time, a
 * deadlock's victim, too many connections, a server shutting down or not yet accepting connections.
 */
const POSTGRES_BUSY_STATES = new Set(['55P03', '40P01', '53300', '57P01', '57P03']);

/**
 * Whether a database error says the write could not be taken now (another writer held the lock past the
 * wait, or the server is going away), so that nothing was stored and the same write may succeed later.
 */
export function isStorageBusy(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { errcode, code } = error as { errcode?: unknown; code?: unknown };
  return (
    (typeof errcode === 'number' && SQLITE_BUSY_CODES.has(errcode % 256)) ||
    (typeof code === 'string' && POSTGRES_BUSY_STATES.has(code))
  );
}
