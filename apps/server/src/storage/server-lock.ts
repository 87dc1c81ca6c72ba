import { hostname } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { createOwnerOnlyFile, secureDataDir } from './owner-only-files.js';

/** The lock file inside DATA_DIR: a tiny SQLite database of its own, never the data's. */
export const SERVER_LOCK_FILE_NAME = 'server.lock';

/**
 * How long a start waits for the lock (and a refused one to read who holds it): a server that was just
 * killed may still be being torn down by the kernel, and the holder briefly locks the file as it records
 * itself. A second server is refused after this long.
 */
const LOCK_WAIT_MS = 1000;

/** SQLite's SQLITE_BUSY: another connection (in this process or another) holds the lock. */
const SQLITE_BUSY = 5;

/** How many times a start takes the lock again when a simultaneous start overwrote its record (see below). */
const ATTEMPTS = 3;

/** The server that holds a DATA_DIR, as it recorded itself. */
export interface ServerLockHolder {
  pid: number;
  host: string;
  startedAt: string;
}

/**
 * Thrown when another server holds the SQLite DATA_DIR: two servers on one SQLite database would each run
 * the log sequencer and the checkpoint signer on it, and could fork the verifiable log.
 */
export class DataDirInUseError extends Error {
  override readonly name = 'DataDirInUseError';

  constructor(
    readonly dataDir: string,
    readonly holder: ServerLockHolder | undefined,
  ) {
    const who =
      holder === undefined
        ? ''
        : ` (pid ${holder.pid}${holder.host === hostname() ? '' : ` on ${holder.host}`}, started ${holder.startedAt})`;
    super(
      `DATA_DIR ${dataDir} is in use by another scenario-scoring server${who}: one server per SQLite DATA_DIR. ` +
        'Stop that server first, or use PostgreSQL (DATABASE_URL) to run several instances. Nothing was changed.',
    );
  }
}

/** The lock a running server holds on its SQLite DATA_DIR; `release()` gives it up (idempotent). */
export interface ServerLock {
  release(): void;
}

/**
 * Takes the server's lock on the SQLite `dataDir` (created owner-only if missing), or throws
 * DataDirInUseError naming the server that holds it. Only the server takes it: the CLI, the tests and the
 * server's own SQLite threads open the data's file as before, without it.
 *
 * The lock is `DATA_DIR/server.lock`, a one-table SQLite database on a connection of its own in this
 * thread, with a write transaction (`BEGIN IMMEDIATE`: SQLite's RESERVED lock) held open until `release()`.
 * SQLite's unix VFS takes it as a POSIX advisory lock, which the kernel drops when the process ends however
 * it ends (kill -9 included): a crashed server leaves nothing stale, the next start takes it. Within one
 * process SQLite tracks its locks per file, so a second server started in the same process is refused too.
 * Nothing is written under it: no journal is left behind, and other processes can still read the table.
 * Nothing else in the server may open `server.lock` (only SQLite, which keeps its descriptors of a locked
 * file open until the locks are gone): closing any other descriptor of it would drop the process's locks.
 *
 * The table holds who took it last (pid, host, start time), for the refusal's message. It is recorded
 * while holding the lock, committed (readers see only what is committed), and the lock taken again at
 * once; a start that raced into that instant and recorded itself is refused there, and the holder,
 * finding another's record, takes the lock again to record itself.
 */
export function takeServerLock(dataDir: string): ServerLock {
  secureDataDir(dataDir);
  const file = join(dataDir, SERVER_LOCK_FILE_NAME);
  createOwnerOnlyFile(file);
  const db = new DatabaseSync(file);
  try {
    db.exec(`PRAGMA busy_timeout = ${LOCK_WAIT_MS}`);
    const me: ServerLockHolder = { pid: process.pid, host: hostname(), startedAt: new Date().toISOString() };
    for (let attempt = 1; ; attempt++) {
      begin(db, dataDir);
      db.exec(
        'CREATE TABLE IF NOT EXISTS holder (id INTEGER PRIMARY KEY CHECK (id = 1), pid INTEGER NOT NULL, ' +
          'host TEXT NOT NULL, started_at TEXT NOT NULL)',
      );
      db.prepare('INSERT OR REPLACE INTO holder (id, pid, host, started_at) VALUES (1, ?, ?, ?)').run(
        me.pid,
        me.host,
        me.startedAt,
      );
      db.exec('COMMIT');
      begin(db, dataDir);
      const recorded = readHolder(db);
      if (recorded?.pid === me.pid && recorded.host === me.host && recorded.startedAt === me.startedAt) break;
      db.exec('ROLLBACK');
      if (attempt === ATTEMPTS) throw new DataDirInUseError(dataDir, recorded);
    }
  } catch (error) {
    db.close();
    throw error;
  }
  let held = true;
  return {
    release() {
      if (!held) return;
      held = false;
      // Closing the connection ends its transaction and drops the lock.
      db.close();
    },
  };
}

/** Takes the lock (`BEGIN IMMEDIATE`), or throws DataDirInUseError when another connection holds it. */
function begin(db: DatabaseSync, dataDir: string): void {
  try {
    db.exec('BEGIN IMMEDIATE');
  } catch (error) {
    if (((error as { errcode?: number }).errcode ?? 0) % 256 !== SQLITE_BUSY) throw error;
    throw new DataDirInUseError(dataDir, readHolder(db));
  }
}

/** Who recorded themselves last, or undefined when it cannot be read (none yet, or being written). */
function readHolder(db: DatabaseSync): ServerLockHolder | undefined {
  try {
    const row = db.prepare('SELECT pid, host, started_at FROM holder WHERE id = 1').get();
    if (row === undefined) return undefined;
    return { pid: Number(row.pid), host: String(row.host), startedAt: String(row.started_at) };
  } catch {
    return undefined;
  }
}
