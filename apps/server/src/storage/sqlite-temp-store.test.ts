import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, watch } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, expect, it } from 'vitest';
import { createTestDatabase } from '../../test/support/test-databases.js';
import { insertLogRecords } from '../score-log/score-log-store.js';
import { openStorage, type Storage } from './storage.js';

// SQLite reads SQLITE_TMPDIR once, when the process first uses it: this file sets it before anything here
// opens a database (vitest.config.ts runs this file in a process of its own, unlike the rest of src/), and
// the test checks that it took effect, so it cannot pass for want of it.
const temporaryFiles = mkdtempSync(join(tmpdir(), 'sqlite-tmpdir-'));
process.env.SQLITE_TMPDIR = temporaryFiles;
afterAll(() => rmSync(temporaryFiles, { recursive: true, force: true }));

/** How many files were created in SQLite's temp directory while `action` ran. */
async function temporaryFilesCreatedBy(action: () => Promise<void> | void): Promise<number> {
  let created = 0;
  const watcher = watch(temporaryFiles, () => {
    created += 1;
  });
  try {
    await action();
    // inotify's events arrive on the event loop.
    await new Promise((resolve) => setTimeout(resolve, 100));
  } finally {
    watcher.close();
  }
  return created;
}

/** Log records inserted in groups of 500 into an index of up to 1,500: many of its pages changed each time. */
async function insertLogGroups(storage: Storage): Promise<void> {
  const record = () => ({
    tenantId: 'temp-store',
    cid: randomBytes(24).toString('hex'),
    bytes: Buffer.concat([Buffer.from('{'), randomBytes(300)]), // a record is JSON; these do not compress
    requestId: 'req_temp_store',
    createdAt: new Date(),
  });
  for (let batch = 0; batch < 3; batch++)
    await insertLogRecords(storage, Array.from({ length: 500 }, record));
}

it('when a group commit inserts many log records into a large index, then its statement journal stays in memory: no temporary file', async () => {
  // A multi-row INSERT in a transaction keeps a statement journal of every page it changes; past 64 KiB
  // SQLite spills it into a file it creates and unlinks in the temp directory, once per statement
  // (open, write, unlink, close: about a tenth of the SQLite thread's time per scoring). It also fails
  // outright where no temp directory is writable (a read-only container).
  const database = await createTestDatabase('sqlite');
  const storage = await openStorage(database.options);
  try {
    expect(await temporaryFilesCreatedBy(() => insertLogGroups(storage))).toBe(0);

    // The same with SQLite's default (temp files on disk) does create them: SQLITE_TMPDIR took effect,
    // and these inserts are ones that spill.
    await sql`pragma temp_store = file`.execute(storage.db);
    expect(await temporaryFilesCreatedBy(() => insertLogGroups(storage))).toBeGreaterThan(0);
  } finally {
    await storage.close();
    await database.dispose();
  }
});
