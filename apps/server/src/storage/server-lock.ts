import { lstatSync, mkdirSync, type Stats } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { createOwnerOnlyFile, DATA_DIR_MODE } from './owner-only-files.js';

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
    super(
      `DATA_DIR ${shown(dataDir)} is in use by another scenario-scoring server${who(holder)}: one server per SQLite DATA_DIR. ` +
        'Stop that server first, or use PostgreSQL (DATABASE_URL) to run several instances. Nothing was changed.',
    );
  }
}

/**
 * Thrown when `DATA_DIR/server.lock` cannot serve as the lock: not a regular file this server made (a
 * directory, a symbolic link, a link to the data's own database, a file that is not the lock's SQLite
 * database), or not readable and writable. Nothing of the data was opened or written.
 */
export class ServerLockError extends Error {
  override readonly name = 'ServerLockError';

  constructor(
    readonly file: string,
    readonly reason: string,
  ) {
    super(
      `${file} could not be used as the server's lock on its DATA_DIR (${reason}). It is made by the server ` +
        'and must be a regular file it can write; with no server running on this DATA_DIR, remove it and ' +
        'start again. Nothing was changed.',
    );
  }
}

/**
 * Thrown by `ServerLock.check` when the running server no longer holds its DATA_DIR: `server.lock` was
 * replaced by a file another server holds, or by one that cannot be the lock (the cause says which). The
 * server must stop at once.
 */
export class ServerLockLostError extends Error {
  override readonly name = 'ServerLockLostError';

  constructor(
    readonly dataDir: string,
    override readonly cause: DataDirInUseError | ServerLockError | Error,
  ) {
    const why =
      cause instanceof DataDirInUseError
        ? `replaced by one another server holds${who(cause.holder)}`
        : cause instanceof ServerLockError
          ? `replaced by something that cannot be the lock: ${cause.reason}`
          : `not to be taken again: ${cause.message}`;
    super(
      `server.lock in DATA_DIR ${shown(dataDir)} was ${why}, so another server may be using this DATA_DIR: ` +
        'this server stops now (its log workers and its listener at once) and exits 1.',
    );
  }
}

/** The holder as the messages name it, ` (pid N[ on HOST], started T)`, or nothing when it is not known. */
function who(holder: ServerLockHolder | undefined): string {
  if (holder === undefined) return '';
  const host = holder.host === hostname() ? '' : ` on ${holder.host}`;
  return ` (pid ${holder.pid}${host}, started ${holder.startedAt})`;
}

/** The DATA_DIR as given and, when that is not already absolute, where it resolves to. */
function shown(dataDir: string): string {
  const absolute = resolve(dataDir);
  return absolute === dataDir ? dataDir : `${dataDir} (${absolute})`;
}

/** The lock a running server holds on its SQLite DATA_DIR. */
export interface ServerLock {
  /**
   * Checks that `DATA_DIR/server.lock` is still the file this lock holds. If it was removed or replaced
   * (a clean-up script, an operator), a second server could start beside this one: the lock is taken
   * again at once on the file now at that path ('retaken'). Throws ServerLockLostError if another server
   * holds that file already, or it cannot be used: this server must then stop.
   */
  check(): 'held' | 'retaken';
  /** Gives the lock up (idempotent). */
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
  // Only created when missing: its modes are tightened by the storage's open, once the lock is held, so
  // that a refused start changes nothing of a running server's DATA_DIR.
  mkdirSync(dataDir, { recursive: true, mode: DATA_DIR_MODE });
  const file = join(dataDir, SERVER_LOCK_FILE_NAME);
  const me: ServerLockHolder = { pid: process.pid, host: hostname(), startedAt: new Date().toISOString() };
  let held = acquire(dataDir, file, LOCK_WAIT_MS, me);
  let released = false;
  return {
    check() {
      if (released) return 'held';
      const now = statOf(file);
      if (now !== undefined && now.dev === held.file.dev && now.ino === held.file.ino) return 'held';
      // The file this process holds is no longer at the path: take the lock on whatever is there now,
      // without waiting (a server that holds it is not going away).
      held.db.close();
      try {
        held = acquire(dataDir, file, 0, me);
      } catch (error) {
        released = true;
        throw new ServerLockLostError(dataDir, error as Error);
      }
      return 'retaken';
    },
    release() {
      if (released) return;
      released = true;
      // Closing the connection ends its transaction and drops the lock.
      held.db.close();
    },
  };
}

/** The lock's connection, holding it, and the file it holds (device and inode). */
interface Held {
  db: DatabaseSync;
  file: Stats;
}

/**
 * Takes the lock on `file` (creating it) for `me`, waiting up to `waitMs` for another holder, or throws.
 *
 * The file is checked before it is opened (usableLockFile): opening, then closing, a file this process
 * holds locks on (the database, its -wal or -shm, linked as server.lock) would drop those locks, since
 * POSIX locks belong to the process and the file, not the descriptor. A path swapped between that check and
 * the open is not caught before the open (only after it, by the inode check at the end).
 */
function acquire(dataDir: string, file: string, waitMs: number, me: ServerLockHolder): Held {
  try {
    createOwnerOnlyFile(file);
  } catch (error) {
    throw new ServerLockError(file, (error as Error).message);
  }
  const before = usableLockFile(file);
  let db: DatabaseSync;
  try {
    db = new DatabaseSync(file);
  } catch (error) {
    throw new ServerLockError(file, (error as Error).message);
  }
  try {
    db.exec(`PRAGMA busy_timeout = ${waitMs}`);
    const foreign = foreignTables(db);
    if (foreign !== undefined) throw new ServerLockError(file, `it is another database, holding ${foreign}`);
    for (let attempt = 1; ; attempt++) {
      begin(db, dataDir, file);
      try {
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
      } catch (error) {
        throw new ServerLockError(file, (error as Error).message);
      }
      begin(db, dataDir, file);
      const recorded = readHolder(db);
      if (recorded?.pid === me.pid && recorded.host === me.host && recorded.startedAt === me.startedAt) break;
      db.exec('ROLLBACK');
      if (attempt === ATTEMPTS) throw new DataDirInUseError(dataDir, recorded);
    }
    // What was locked is what was checked: the path was not swapped between the check and the open.
    const after = statOf(file);
    if (after === undefined || after.dev !== before.dev || after.ino !== before.ino)
      throw new ServerLockError(file, 'it was replaced while the lock was being taken');
    return { db, file: after };
  } catch (error) {
    db.close();
    throw error;
  }
}

/** The lock file's own status (not a link's target), or undefined when there is none. */
function statOf(file: string): Stats | undefined {
  try {
    return lstatSync(file);
  } catch {
    return undefined;
  }
}

/** The lock file's status, or ServerLockError when it cannot be the lock (see ServerLockError). */
function usableLockFile(file: string): Stats {
  const stats = statOf(file);
  if (stats === undefined) throw new ServerLockError(file, 'it could not be created');
  if (stats.isSymbolicLink()) throw new ServerLockError(file, 'it is a symbolic link');
  if (!stats.isFile()) throw new ServerLockError(file, 'it is not a regular file');
  // The lock this server makes has one name; a second one is a hard link: to the data's database, its
  // -wal or -shm, or anything else.
  if (stats.nlink !== 1) throw new ServerLockError(file, `it has ${stats.nlink} names (a hard link)`);
  return stats;
}

/**
 * Takes the lock (`BEGIN IMMEDIATE`), or throws DataDirInUseError when another connection holds it, and
 * ServerLockError when the file cannot be the lock (not a database, not writable).
 */
function begin(db: DatabaseSync, dataDir: string, file: string): void {
  try {
    db.exec('BEGIN IMMEDIATE');
  } catch (error) {
    if (((error as { errcode?: number }).errcode ?? 0) % 256 !== SQLITE_BUSY)
      throw new ServerLockError(file, (error as Error).message);
    throw new DataDirInUseError(dataDir, readHolder(db));
  }
}

/**
 * The tables of `db` other than the lock's own `holder` (the first few, as text), or undefined when it has
 * none: an empty file, or a lock this server made. Read before anything is written.
 */
function foreignTables(db: DatabaseSync): string | undefined {
  let rows: { name: unknown }[];
  try {
    rows = db.prepare("SELECT name FROM sqlite_master WHERE name <> 'holder' LIMIT 4").all() as {
      name: unknown;
    }[];
  } catch {
    return undefined; // not a database: begin() says so
  }
  if (rows.length === 0) return undefined;
  return rows.map((row) => String(row.name)).join(', ');
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
