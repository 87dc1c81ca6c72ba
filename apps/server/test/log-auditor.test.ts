import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NoteSigner } from '@scenario-scoring/tlog';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Database } from '../src/storage/database.js';
import { packRecord, unpackRecord } from '../src/storage/record-codec.js';
import {
  logRecords,
  TEST_LOG_ORIGIN,
  testRecord,
  testSequencer,
  widestLeafTile,
} from './support/log-fixtures.js';
import { forEachDatabase } from './support/test-databases.js';
import { testFeatures } from './support/test-features.js';
import { startTestServer, type TestServer } from './support/test-server.js';

/** The client package's built auditor, run as `npx scenario-scoring-audit` runs it. */
const AUDITOR = fileURLToPath(
  new URL('../../../packages/client/dist/bin/scenario-scoring-audit.js', import.meta.url),
);

forEachDatabase('scenario-scoring-audit', ({ storage, kind }) => {
  const signer = new NoteSigner('test-log', randomBytes(32));
  const tenant = 'audited';
  const records = Array.from({ length: 40 }, (_, n) => testRecord(tenant, n));
  let server: TestServer;
  let apiKey: string;
  let dir: string;
  let state: string;
  let log: ReturnType<typeof testSequencer>;
  let verifierKey: string;
  beforeAll(async () => {
    verifierKey = await signer.verifierKey();
    server = await startTestServer({ storage: storage(), logSigner: signer });
    // An auditor's key: the log reads are all the monitor needs.
    ({ key: apiKey } = await testFeatures(storage()).keys.create(tenant, 'log:read'));
    dir = await mkdtemp(join(tmpdir(), 'ss-audit-'));
    state = join(dir, 'state.json');
    log = testSequencer(storage(), signer);
  });
  afterAll(async () => {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  const origin = `${TEST_LOG_ORIGIN}/${tenant}`;
  const audit = (args: string[] = [], key = verifierKey, pinnedOrigin: string | null = origin) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      const pinned = pinnedOrigin === null ? [] : ['--origin', pinnedOrigin];
      const argv = [AUDITOR, '--url', server.url, '--key', key, ...pinned, '--state', state, ...args];
      execFile(
        process.execPath,
        argv,
        { env: { SCENARIO_SCORING_API_KEY: apiKey } },
        (error, stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, stdout, stderr }),
      );
    });

  it('pins the first checkpoint, then accepts each one consistent with it, proving the CIDs given', async () => {
    await logRecords(storage(), records.slice(0, 10));
    await log.sequencer.sequenceOnce();
    expect(await audit()).toMatchObject({
      code: 0,
      stdout: `OK ${TEST_LOG_ORIGIN}/${tenant} tree size 10 (first checkpoint, pinned)\n`,
    });
    await logRecords(storage(), records.slice(10, 30));
    await log.sequencer.sequenceOnce();
    const cids = records.slice(0, 30).flatMap((record) => ['--cid', record.cid]);
    expect(await audit(cids)).toMatchObject({
      code: 0,
      stdout: `OK ${TEST_LOG_ORIGIN}/${tenant} tree size 30 (was 10, consistent), 30 record(s) included\n`,
    });
    expect(await audit()).toMatchObject({ code: 0, stdout: expect.stringContaining('tree size 30 (was 30') });
  });

  it('exits 1 for a checkpoint signed by another key, and leaves its state alone', async () => {
    const before = await readFile(state, 'utf8');
    const other = await new NoteSigner('test-log', randomBytes(32)).verifierKey();
    const result = await audit([], other);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('FAIL latest checkpoint: the checkpoint has no valid signature by test-log\n');
    expect(await readFile(state, 'utf8')).toBe(before);
  });

  it("exits 1 for another tenant's genuine checkpoint (signed by the same key) served as this one's, and needs --origin", async () => {
    const before = await readFile(state, 'utf8');
    // What the server answers the auditor is tenant `audited`'s log; pinned as tenant `other`'s, it is refused.
    const result = await audit([], verifierKey, `${TEST_LOG_ORIGIN}/other`);
    expect(result).toMatchObject({
      code: 1,
      stderr: `FAIL latest checkpoint: the checkpoint is for log ${origin}, not ${TEST_LOG_ORIGIN}/other\n`,
    });
    expect(await audit([], verifierKey, null)).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--origin'),
    });
    expect(await readFile(state, 'utf8')).toBe(before);
  });

  it('exits 1, naming the leaf or the record, when the database is edited behind the service', async () => {
    await logRecords(storage(), records.slice(30));
    await log.sequencer.sequenceOnce();
    const db = storage().db;
    const [altered, deleted] = [records[3], records[4]] as const;
    const restore = await disableLogTriggers(db, kind);
    try {
      // Changed as someone who knows how records are stored would change one: unpacked, edited, packed.
      const bytes = packRecord(
        new TextEncoder().encode(
          unpackRecord(altered?.bytes ?? new Uint8Array())
            .toString()
            .replace('"n":3', '"n":9'),
        ),
      );
      await db
        .updateTable('log_records')
        .set({ bytes })
        .where('cid', '=', altered?.cid as string)
        .execute();
      await db
        .deleteFrom('log_records')
        .where('cid', '=', deleted?.cid as string)
        .execute();
      // A rewritten leaf hash: the tree no longer extends the checkpoint the auditor accepted.
      const tile = await widestLeafTile(db, tenant);
      const hashes = Buffer.from(tile.hashes);
      hashes[0] = (hashes[0] as number) ^ 0xff;
      await db
        .updateTable('log_tiles')
        .set({ hashes })
        .where('tenant_id', '=', tenant)
        .where('width', '=', tile.width)
        .execute();
    } finally {
      await restore();
    }
    const result = await audit(['--cid', altered?.cid as string, '--cid', deleted?.cid as string]);
    expect(result.code).toBe(1);
    const lines = result.stderr.trim().split('\n');
    expect(lines[0]).toMatch(/^FAIL checkpoints 30 → 40 are not consistent: root mismatch$/);
    // The server itself refuses to serve a record whose stored bytes do not hash to its CID.
    expect(lines[1]).toBe(`FAIL ${altered?.cid}: record: HTTP 500 internal_error`);
    expect(lines[2]).toBe(`FAIL ${deleted?.cid}: record: HTTP 404 not_found`);
  });
});

/** Disables the append-only triggers as someone with database access could; returns how to restore them. */
async function disableLogTriggers(
  db: Kysely<Database>,
  kind: 'sqlite' | 'postgres',
): Promise<() => Promise<void>> {
  if (kind === 'postgres') {
    for (const table of ['log_records', 'log_tiles'])
      await sql.raw(`ALTER TABLE ${table} DISABLE TRIGGER USER`).execute(db);
    return async () => {
      for (const table of ['log_records', 'log_tiles'])
        await sql.raw(`ALTER TABLE ${table} ENABLE TRIGGER USER`).execute(db);
    };
  }
  for (const trigger of ['log_records_erase_only', 'log_records_no_delete', 'log_tiles_no_update']) {
    await sql.raw(`DROP TRIGGER ${trigger}`).execute(db);
  }
  return async () => {};
}
