import { chmodSync, closeSync, lstatSync, mkdirSync, openSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** The mode of DATA_DIR: only its owner may list or enter it. */
export const DATA_DIR_MODE = 0o700;
/** The mode of every file in DATA_DIR: subjects, contexts, key hashes and the secrets key are the owner's only. */
export const DATA_FILE_MODE = 0o600;

/**
 * Creates `dataDir` owner-only (0700) and tightens it and every regular file directly in it to 0700 / 0600
 * when their mode lets group or others in, so no other user of the host can read them. Run at start; a
 * looser mode is tightened, not refused, so a DATA_DIR made by an earlier version or by hand starts.
 * Returns the paths it tightened.
 */
export function secureDataDir(dataDir: string): string[] {
  mkdirSync(dataDir, { recursive: true, mode: DATA_DIR_MODE });
  const tightened: string[] = [];
  if ((lstatSync(dataDir).mode & 0o077) !== 0) {
    chmodSync(dataDir, DATA_DIR_MODE);
    tightened.push(dataDir);
  }
  for (const entry of readdirSync(dataDir, { withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = join(dataDir, entry.name);
    if ((lstatSync(file).mode & 0o077) !== 0) {
      chmodSync(file, DATA_FILE_MODE);
      tightened.push(file);
    }
  }
  return tightened;
}

/**
 * Creates `file` empty and owner-only if it does not exist yet. SQLite then gives its `-wal` and `-shm`
 * files the database file's permissions, so they are born 0600 too, whatever the umask.
 */
export function createOwnerOnlyFile(file: string): void {
  try {
    closeSync(openSync(file, 'wx', DATA_FILE_MODE));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}
