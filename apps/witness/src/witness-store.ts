import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync } from 'node:sqlite';

/** What the witness last cosigned for one log: its size, root hash and the cosigned note it answered. */
export interface WitnessedCheckpoint {
  origin: string;
  treeSize: number;
  rootHash: Uint8Array;
  /** The checkpoint note as the log signed it, with this witness's cosignature appended. */
  note: string;
}

/** The witness's state: per log origin, the latest checkpoint it cosigned. SQLite, durable (synchronous=FULL). */
export class WitnessStore {
  readonly #db: DatabaseSync;

  /** Opens (creating) the SQLite database at `path` (`:memory:` for tests). */
  constructor(path: string) {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.#db = new DatabaseSync(path);
    this.#db.exec(`
      PRAGMA journal_mode = WAL;
      PRAGMA synchronous = FULL;
      PRAGMA busy_timeout = 5000;
      CREATE TABLE IF NOT EXISTS witnessed_checkpoints (
        origin TEXT PRIMARY KEY,
        tree_size INTEGER NOT NULL,
        root_hash BLOB NOT NULL,
        note TEXT NOT NULL,
        updated_at TEXT NOT NULL
      ) STRICT;`);
  }

  /** The latest checkpoint cosigned for `origin`; undefined when none was. */
  latest(origin: string): WitnessedCheckpoint | undefined {
    const row = this.#db
      .prepare('SELECT origin, tree_size, root_hash, note FROM witnessed_checkpoints WHERE origin = ?')
      .get(origin) as { origin: string; tree_size: number; root_hash: Uint8Array; note: string } | undefined;
    return (
      row && {
        origin: row.origin,
        treeSize: row.tree_size,
        rootHash: new Uint8Array(row.root_hash),
        note: row.note,
      }
    );
  }

  /**
   * Check and persist, atomically (one IMMEDIATE transaction, so two witness processes on one file
   * serialise too): when the stored checkpoint for `next.origin` is still `expected` (undefined: none is
   * stored), stores `next` and gives undefined; otherwise stores nothing and gives the stored size.
   */
  replace(next: WitnessedCheckpoint, expected: WitnessedCheckpoint | undefined): number | undefined {
    this.#db.exec('BEGIN IMMEDIATE');
    try {
      const stored = this.latest(next.origin);
      if (
        stored?.treeSize !== expected?.treeSize ||
        Buffer.compare(stored?.rootHash ?? new Uint8Array(), expected?.rootHash ?? new Uint8Array()) !== 0
      ) {
        this.#db.exec('ROLLBACK');
        return stored?.treeSize ?? 0;
      }
      this.#db
        .prepare(
          `INSERT INTO witnessed_checkpoints (origin, tree_size, root_hash, note, updated_at)
           VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (origin) DO UPDATE SET tree_size = excluded.tree_size,
             root_hash = excluded.root_hash, note = excluded.note, updated_at = excluded.updated_at`,
        )
        .run(next.origin, next.treeSize, next.rootHash, next.note, new Date().toISOString());
      this.#db.exec('COMMIT');
      return undefined;
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec('ROLLBACK');
      throw error;
    }
  }

  /** Closes the database. */
  close(): void {
    this.#db.close();
  }
}
