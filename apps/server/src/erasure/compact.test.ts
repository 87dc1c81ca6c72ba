import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/test-databases.js';
import { closeTestStorage } from '../../test/support/test-features.js';
import { openStorage, type Storage } from '../storage/storage.js';
import { compact } from './erasure-processor.js';

describe('compact (sqlite)', () => {
  let database: TestDatabase;
  let storage: Storage;
  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
    storage = await openStorage(database.options);
  });
  afterAll(async () => {
    await closeTestStorage(storage);
    await database.dispose();
  });

  it('reports a checkpoint kept busy by a reader as not done, and is done once the reader has gone', async () => {
    const file = join(database.options.dataDir, 'scenario-scoring.sqlite');
    const marker = `erase-me-${Date.now()}`;
    await sql`create table compact_probe (text text)`.execute(storage.db);
    await sql`insert into compact_probe values (${marker})`.execute(storage.db);
    expect(await compact(storage)).toBe(true);
    expect((await readFile(file)).includes(marker)).toBe(true);

    // A reader on the snapshot that still holds the row: the WAL frames that zero it cannot all be copied.
    const reader = new DatabaseSync(file);
    reader.exec('begin');
    reader.prepare('select count(*) from compact_probe').all();
    await sql`delete from compact_probe`.execute(storage.db);
    expect(await compact(storage, undefined, 1)).toBe(false);
    reader.exec('commit');
    reader.close();

    expect(await compact(storage)).toBe(true);
    expect((await readFile(file)).includes(marker)).toBe(false);
  });
});
