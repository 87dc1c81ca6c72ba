import { join } from 'node:path';
import { createOwnerOnlyFile, secureDataDir } from './owner-only-files.js';
import { SqliteThreadDialect } from './sqlite-thread.js';

/** The SQLite file inside DATA_DIR. */
export const SQLITE_FILE_NAME = 'scenario-scoring.sqlite';

const BUSY_TIMEOUT_MS = 5000;

/**
 * The WAL size (in pages, about 40 MB) at which the writing connection checkpoints by itself. The
 * SqliteCheckpointer thread normally keeps the WAL far smaller; this only bounds it if that thread falls
 * behind or is not running.
 */
const FALLBACK_AUTOCHECKPOINT_PAGES = 10_000;

/**
 * Prepared statements kept per SQL text. Kysely prepares every query it runs; preparing a multi-row INSERT
 * of a run batch (thousands of parameters) costs about as much as running it, and the same texts recur.
 */
const STATEMENT_CACHE_SIZE = 100;

/**
 * Opens (creating if needed) `${dataDir}/scenario-scoring.sqlite` in WAL mode with synchronous=FULL,
 * so that a commit returns only once it is flushed to disk, on a connection in a thread of its own (see
 * sqlite-thread.ts): the event loop never waits for that flush. Temporary storage (statement journals)
 * is in memory. Checkpoints are left to a SqliteCheckpointer (see FALLBACK_AUTOCHECKPOINT_PAGES).
 */
export function openSqliteDialect(dataDir: string): SqliteThreadDialect {
  // Owner-only: the directory 0700, every file in it 0600 (subjects, key hashes: no other user's to read).
  secureDataDir(dataDir);
  createOwnerOnlyFile(join(dataDir, SQLITE_FILE_NAME));
  return new SqliteThreadDialect({
    file: join(dataDir, SQLITE_FILE_NAME),
    pragmas: [
      'PRAGMA journal_mode = WAL',
      'PRAGMA synchronous = FULL',
      'PRAGMA foreign_keys = ON',
      `PRAGMA wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT_PAGES}`,
      // Statement journals in memory: a multi-row INSERT in a transaction (every group commit) journals
      // each page it changes, and past 64 KiB SQLite spills that into a temp file it creates, writes and
      // unlinks once per statement: about a fifth of this thread's CPU per scoring, and a failure where
      // no temp directory is writable. A journal holds one statement's changed pages: about 100 KiB for a
      // scoring group commit, a few MB at most for a run batch's 1,000-row insert. (Sorts for large
      // index builds in a migration are held in memory too.)
      'PRAGMA temp_store = MEMORY',
    ],
    statementCacheSize: STATEMENT_CACHE_SIZE,
    busyTimeoutMs: BUSY_TIMEOUT_MS,
    // The -wal and -shm files exist now; any left looser by an older version are tightened.
    onOpened: () => secureDataDir(dataDir),
  });
}
