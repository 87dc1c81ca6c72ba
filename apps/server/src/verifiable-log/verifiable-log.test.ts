import {
  LogProofError,
  verifyCheckpoint,
  verifyConsistency,
  verifyInclusion,
} from '@scenario-scoring/client';
import {
  buildLogRecord,
  canonicalBytes,
  cidOfBytes,
  effectivePolicy,
  scoreAndLog,
  scoreContext,
} from '@scenario-scoring/engine';
import { CompiledQuery, type Kysely, sql } from 'kysely';
import { beforeAll, expect, it } from 'vitest';
import { type GoVerifierInput, goVerify } from '../../test/interop/go-log-verifier.js';
import {
  logRecords,
  TEST_LOG_ORIGIN,
  testRecord,
  testSequencer,
  verified,
  widestLeafTile,
} from '../../test/support/log-fixtures.js';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { AppError } from '../errors/app-error.js';
import { recordStamp } from '../score-log/record-stamp.js';
import { chunks } from '../storage/chunks.js';
import type { Database } from '../storage/database.js';
import {
  down as downLeafIndexFromTiles,
  up as upLeafIndexFromTiles,
} from '../storage/migrations/0023-leaf-index-from-tiles.js';
import { findCheckpoint, proveConsistency, proveInclusion } from './verifiable-log-service.js';
import {
  appendListedLeaves,
  LogMovedError,
  lastLeafTileQuery,
  leafAndCheckpointQuery,
  listedLeavesInsert,
  type QueuedLeaf,
  selectCheckpoint,
  selectLeafAndCheckpoint,
  selectQueuedLeaves,
  selectTile,
  selectTiles,
  selectTreeSize,
} from './verifiable-log-store.js';
import { inclusionProofView } from './verifiable-log-views.js';

/** Batches that cross tile edges (256) and powers of two, one checkpoint after each: 2000 records in all. */
const BATCHES = [1, 1, 2, 250, 2, 256, 300, 211, 1, 700, 276];
const TENANT = 'log-alice';

/**
 * A scoring's real record, in the form logged before score-log/2 or in score-log/2 (with a fresh salt),
 * for record `n`: among the test records, so both forms are proved by the client and by Go.
 */
function scoringRecord(n: number, schema: 'score-log/1' | 'score-log/2') {
  const subject = `applicant-${n}`;
  const context = { jurisdiction: 'DE', utilization: (n % 10) / 10 };
  const policy = effectivePolicy('DE');
  const result = scoreContext(context, policy);
  const bytes =
    schema === 'score-log/1'
      ? canonicalBytes(buildLogRecord({ policy_version: policy.policy_version, subject, context, result }))
      : scoreAndLog(
          subject,
          context,
          recordStamp({ kind: 'run_item', run_id: 'run_test', item: n }, new Date()),
        ).logBytes;
  return { tenantId: TENANT, cid: cidOfBytes(bytes), bytes };
}

forEachDatabase('the verifiable log', ({ storage, kind }) => {
  const records = Array.from({ length: 2000 }, (_, n) =>
    n % 100 < 2 ? scoringRecord(n, n % 100 === 0 ? 'score-log/1' : 'score-log/2') : testRecord(TENANT, n),
  );
  const byCid = new Map(records.map((record) => [record.cid, record]));
  let log: ReturnType<typeof testSequencer>;
  const sizes: number[] = [];
  /** The tree sizes of the tenant's stored checkpoints, smallest first. */
  const checkpointSizes = async (tenantId: string) =>
    (
      await storage()
        .db.selectFrom('log_checkpoints')
        .select('tree_size')
        .where('tenant_id', '=', tenantId)
        .orderBy('tree_size')
        .execute()
    ).map((row) => Number(row.tree_size));
  beforeAll(async () => {
    log = testSequencer(storage());
    let offset = 0;
    for (const size of BATCHES) {
      await logRecords(storage(), records.slice(offset, offset + size));
      offset += size;
      const [batch] = await log.sequencer.sequenceOnce();
      sizes.push(batch?.treeSize ?? -1);
    }
  }, 60_000);

  it('gives every record a dense index and signs a checkpoint per batch, nothing else', async () => {
    let total = 0;
    expect(sizes).toEqual(BATCHES.map((size) => (total += size)));
    expect(await log.sequencer.sequenceOnce()).toEqual([]);
    // A record committed again (an identical scoring or run item) stays one record and one leaf.
    await logRecords(storage(), records.slice(0, 20));
    expect(await storage().db.selectFrom('log_leaf_queue').selectAll().execute()).toEqual([]);
    expect(await log.sequencer.sequenceOnce()).toEqual([]);
    const latest = await verified(await findCheckpoint(storage().db, TENANT), log.signer, TENANT);
    expect(latest).toMatchObject({ origin: `${TEST_LOG_ORIGIN}/${TENANT}`, treeSize: 2000 });
  });

  it('reads several tiles in one statement, each the widest stored, in the order asked, none where none is', async () => {
    const db = storage().db;
    // 2,000 leaves: level 0 holds 7 full tiles and a partial one stored at several widths; level 1 one partial.
    const wanted = [
      { level: 0, index: 7 },
      { level: 1, index: 0 },
      { level: 0, index: 0 },
      { level: 0, index: 8 },
      { level: 2, index: 0 },
      { level: 0, index: 3 },
    ];
    const batch = await selectTiles(db, TENANT, wanted);
    const single = await Promise.all(wanted.map(({ level, index }) => selectTile(db, TENANT, level, index)));
    expect(batch.map((tile) => tile?.length)).toEqual([
      208 * 32,
      7 * 32,
      256 * 32,
      undefined,
      undefined,
      256 * 32,
    ]);
    expect(batch.map((tile) => tile && Buffer.from(tile).toString('base64'))).toEqual(
      single.map((tile) => tile && Buffer.from(tile).toString('base64')),
    );
    expect(await selectTiles(db, 'log-nobody', wanted)).toEqual(wanted.map(() => undefined));
    expect(await selectTiles(db, TENANT, [])).toEqual([]);
  });

  /** A query's plan, one line a step: SQLite's `explain query plan` details, PostgreSQL's `explain`. */
  async function planLines(db: Kysely<Database>, query: CompiledQuery): Promise<string[]> {
    if (kind === 'sqlite') {
      const plan = await db.executeQuery<{ detail: string }>(
        CompiledQuery.raw(`explain query plan ${query.sql}`, [...query.parameters]),
      );
      return plan.rows.map((row) => row.detail);
    }
    const plan = await db.executeQuery<{ 'QUERY PLAN': string }>(
      CompiledQuery.raw(`explain ${query.sql}`, [...query.parameters]),
    );
    return plan.rows.map((row) => row['QUERY PLAN']);
  }

  it("finds a record's leaf by the leaves' whole primary key, not by reading the tenant's leaves", async () => {
    // 2,000 leaves and no ANALYZE: as a join, PostgreSQL probed log_leaves with the tenant and the CID
    // alone (every leaf of the tenant read); the subquery gives it the record's created_at too.
    const db = storage().db;
    const query = leafAndCheckpointQuery(TENANT, (records[1500] as { cid: string }).cid).compile(db);
    const lines = await planLines(db, query);
    const leaves = lines.findIndex((line) => /log_leaves/.test(line));
    const probe = kind === 'sqlite' ? lines[leaves] : lines[leaves + 1];
    expect(probe, lines.join('\n')).toMatch(/tenant_id.*created_at.*cid/);
    expect(lines.filter((line) => /^SCAN log_leaves|Seq Scan on log_leaves/.test(line))).toEqual([]);
    const { leafIndex, checkpoint } = await selectLeafAndCheckpoint(
      db,
      TENANT,
      (records[1500] as { cid: string }).cid,
    );
    const stored = await db
      .selectFrom('log_leaves')
      .select('leaf_index')
      .where('tenant_id', '=', TENANT)
      .where('cid', '=', (records[1500] as { cid: string }).cid)
      .executeTakeFirstOrThrow();
    expect(leafIndex).toBe(Number(stored.leaf_index));
    expect(checkpoint?.treeSize).toBe(2000);
    expect(await selectLeafAndCheckpoint(db, TENANT, 'bafkreinosuchrecord', 999)).toEqual({
      leafIndex: undefined,
      checkpoint: undefined,
    });
  });

  it("reads the tree size from the last level-0 tile, by the tiles' primary key (no leaf index, no scan)", async () => {
    const db = storage().db;
    const query = lastLeafTileQuery(db, TENANT).compile();
    const lines = await planLines(db, query);
    expect(lines.join('\n')).toMatch(
      kind === 'sqlite'
        ? /SEARCH log_tiles USING (PRIMARY KEY|COVERING INDEX sqlite_autoindex_log_tiles_1) \(tenant_id=\? AND level=\?\)/
        : /Index.*Scan Backward using log_tiles_pk/,
    );
    expect(lines.filter((line) => /^SCAN|Seq Scan|Sort|TEMP B-TREE/.test(line.trim()))).toEqual([]);
    // The same size the leaves give: one more than the highest leaf index.
    const highest = await db
      .selectFrom('log_leaves')
      .select((eb) => eb.fn.max('leaf_index').as('last'))
      .where('tenant_id', '=', TENANT)
      .executeTakeFirstOrThrow();
    expect(await selectTreeSize(db, TENANT)).toBe(Number(highest.last) + 1);
    expect(await selectTreeSize(db, TENANT)).toBe(2000);
    expect(await selectTreeSize(db, 'log-nobody')).toBe(0);
  });

  it("0023's down gives back the unique leaf-index index over the stored leaves, and its up drops it again", async () => {
    const db = storage().db;
    const indexes = async () =>
      kind === 'sqlite'
        ? (
            await sql<{
              name: string;
            }>`select name from sqlite_schema where type = 'index' and tbl_name = 'log_leaves'`.execute(db)
          ).rows.map((row) => row.name)
        : (
            await sql<{
              name: string;
            }>`select indexname as name from pg_indexes where tablename = 'log_leaves'`.execute(db)
          ).rows.map((row) => row.name);
    expect(await indexes()).not.toContain('log_leaves_leaf_index_idx');
    await downLeafIndexFromTiles(db);
    try {
      expect(await indexes()).toContain('log_leaves_leaf_index_idx');
    } finally {
      await upLeafIndexFromTiles(db);
    }
    expect(await indexes()).not.toContain('log_leaves_leaf_index_idx');
    expect(await selectTreeSize(db, TENANT)).toBe(2000);
  });

  it('proves the inclusion of every record, with the client and with Go (tlog.CheckRecord)', async () => {
    const go: GoVerifierInput = {
      verifier_key: await log.signer.verifierKey(),
      origin: `${TEST_LOG_ORIGIN}/${TENANT}`,
      checkpoints: [],
      inclusions: [],
      consistencies: [],
    };
    const latest = await verified(await findCheckpoint(storage().db, TENANT), log.signer, TENANT);
    go.checkpoints.push(latest.note);
    const seen = new Set<number>();
    for (const chunk of chunks(records, 100)) {
      await Promise.all(
        chunk.map(async (record) => {
          const proof = inclusionProofView(await proveInclusion(storage().db, TENANT, record.cid));
          await verifyInclusion(record.bytes, proof, latest);
          seen.add(proof.leaf_index);
          go.inclusions.push({
            record: Buffer.from(record.bytes).toString('base64'),
            leaf_index: proof.leaf_index,
            tree_size: proof.tree_size,
            path: proof.inclusion_path,
          });
        }),
      );
    }
    expect(seen.size).toBe(2000);
    expect(await goVerify(go)).toBe('ok: 1 checkpoints, 2000 inclusion proofs, 0 consistency proofs');
  }, 60_000);

  it("refuses this tenant's genuine checkpoint presented as another tenant's, with the client and with Go", async () => {
    const { note } = await findCheckpoint(storage().db, TENANT);
    const verifierKey = await log.signer.verifierKey();
    const other = `${TEST_LOG_ORIGIN}/log-bob`;
    await expect(verifyCheckpoint(note, verifierKey, { origin: other })).rejects.toThrow(
      `the checkpoint is for log ${TEST_LOG_ORIGIN}/${TENANT}, not ${other}`,
    );
    const go = { verifier_key: verifierKey, checkpoints: [note], inclusions: [], consistencies: [] };
    await expect(goVerify({ ...go, origin: other })).rejects.toThrow(
      `checkpoint is for log "${TEST_LOG_ORIGIN}/${TENANT}", not "${other}"`,
    );
    expect(await goVerify({ ...go, origin: `${TEST_LOG_ORIGIN}/${TENANT}` })).toMatch(/^ok: 1 checkpoints/);
  });

  it('proves every checkpoint consistent with every earlier one, with the client and with Go (tlog.CheckTree)', async () => {
    const go: GoVerifierInput = {
      verifier_key: await log.signer.verifierKey(),
      origin: `${TEST_LOG_ORIGIN}/${TENANT}`,
      checkpoints: [],
      inclusions: [],
      consistencies: [],
    };
    for (const size of sizes) go.checkpoints.push((await findCheckpoint(storage().db, TENANT, size)).note);
    for (const [i, from] of sizes.entries()) {
      for (const to of sizes.slice(i)) {
        const proof = await proveConsistency(storage().db, TENANT, from, to);
        await verifyConsistency(
          await verified(proof.from, log.signer, TENANT),
          await verified(proof.to, log.signer, TENANT),
          proof.path.map((hash) => Buffer.from(hash).toString('base64')),
        );
        go.consistencies.push({
          from,
          to,
          path: proof.path.map((hash) => Buffer.from(hash).toString('base64')),
        });
      }
    }
    expect(await goVerify(go)).toBe(
      `ok: ${sizes.length} checkpoints, 0 inclusion proofs, ${go.consistencies.length} consistency proofs`,
    );
  });

  it("answers a record not sequenced yet with 409 and Retry-After, and another tenant's CID with 404", async () => {
    const pending = testRecord(TENANT, 10_000);
    await logRecords(storage(), [pending]);
    await expect(proveInclusion(storage().db, TENANT, pending.cid)).rejects.toMatchObject({
      code: 'log_record_not_sequenced',
      headers: { 'Retry-After': '1' },
    });
    const [cid] = byCid.keys();
    await expect(proveInclusion(storage().db, 'log-bob', cid as string)).rejects.toMatchObject({
      code: 'not_found',
    });
    await expect(proveInclusion(storage().db, TENANT, cid as string, 1)).resolves.toMatchObject({
      leafIndex: 0,
    });
    await expect(proveInclusion(storage().db, TENANT, records[5]?.cid as string, 4)).rejects.toMatchObject({
      code: 'tree_size_too_small',
    });
    await expect(proveConsistency(storage().db, TENANT, 4, 1)).rejects.toMatchObject({
      code: 'tree_size_too_small',
    });
    await expect(findCheckpoint(storage().db, TENANT, 3)).rejects.toBeInstanceOf(AppError);
    await log.sequencer.sequenceOnce();
    await expect(proveInclusion(storage().db, TENANT, pending.cid)).resolves.toMatchObject({
      leafIndex: 2000,
    });
  });

  it('refuses, in the database itself, to update or delete a record, a leaf, a tile or a checkpoint', async () => {
    const db = storage().db;
    const [record] = records;
    await expect(
      db
        .updateTable('log_records')
        .set({ bytes: new Uint8Array([1]) })
        .where('cid', '=', record?.cid as string)
        .execute(),
    ).rejects.toThrow(/append-only/);
    await expect(
      db
        .deleteFrom('log_records')
        .where('cid', '=', record?.cid as string)
        .execute(),
    ).rejects.toThrow(/append-only/);
    await expect(
      db
        .updateTable('log_records')
        .set({ request_id: 'req_other' })
        .where('cid', '=', record?.cid as string)
        .execute(),
    ).rejects.toThrow(/append-only/);
    await expect(
      db
        .updateTable('log_leaves')
        .set({ cid: records[1]?.cid as string })
        .where('cid', '=', record?.cid as string)
        .execute(),
    ).rejects.toThrow(/append-only/);
    await expect(db.deleteFrom('log_leaves').where('tenant_id', '=', TENANT).execute()).rejects.toThrow(
      /append-only/,
    );
    await expect(
      db.updateTable('log_tiles').set({ width: 1 }).where('tenant_id', '=', TENANT).execute(),
    ).rejects.toThrow(/append-only/);
    await expect(db.deleteFrom('log_checkpoints').where('tenant_id', '=', TENANT).execute()).rejects.toThrow(
      /append-only/,
    );
  });

  it('sequences a tenant once when two sequencings race: the other finds the tree moved (or locked) and writes nothing', async () => {
    const tenant = 'log-raced';
    const own = Array.from({ length: 300 }, (_, n) => testRecord(tenant, n));
    await logRecords(storage(), own);
    // Both read the tree (size 0) before either writes; on SQLite the second's write transaction finds the
    // tree grown and falls back to the one-transaction path, which finds nothing queued; on PostgreSQL the
    // second does not get the tenant's lock.
    const results = await Promise.all([
      log.sequencer.sequenceTenant(tenant),
      log.sequencer.sequenceTenant(tenant),
    ]);
    expect(results.filter((batch) => batch !== undefined)).toEqual([
      { tenantId: tenant, leaves: 300, treeSize: 300 },
    ]);
    const leaves = await storage()
      .db.selectFrom('log_leaves')
      .select('leaf_index')
      .where('tenant_id', '=', tenant)
      .orderBy('leaf_index')
      .execute();
    expect(leaves.map((leaf) => Number(leaf.leaf_index))).toEqual(own.map((_, n) => n));
    expect(await checkpointSizes(tenant)).toEqual([300]);
    const latest = await verified(await findCheckpoint(storage().db, tenant), log.signer, tenant);
    for (const record of [own[0], own[299]] as (typeof own)[number][]) {
      const proof = await proveInclusion(storage().db, tenant, record.cid);
      await verifyInclusion(record.bytes, inclusionProofView(proof), latest);
    }
  });

  it('sequences a backlog larger than a batch in rounds that follow at once, each tenant in turn, not one per interval', async () => {
    const tenants = ['log-backlog-a', 'log-backlog-b'];
    for (const tenant of tenants)
      await logRecords(
        storage(),
        Array.from({ length: 7 }, (_, n) => testRecord(tenant, n)),
      );
    // An interval far longer than the test: only the rounds started at once can sequence it all.
    const { sequencer } = testSequencer(storage(), log.signer, {
      checkpointIntervalMs: 3_600_000,
      maxBatch: 3,
    });
    sequencer.start();
    try {
      await expect
        .poll(async () => Number((await selectCheckpoint(storage().db, 'log-backlog-b'))?.treeSize ?? 0), {
          timeout: 10_000,
        })
        .toBe(7);
    } finally {
      await sequencer.stop();
    }
    for (const tenant of tenants) expect(await checkpointSizes(tenant)).toEqual([3, 6, 7]);
  });

  it('sequences the other tenants of a round when one tenant’s batch fails, and leaves that one queued', async () => {
    for (const tenant of ['log-failing', 'log-healthy'])
      await logRecords(
        storage(),
        Array.from({ length: 4 }, (_, n) => testRecord(tenant, n)),
      );
    const { sequencer } = testSequencer(storage());
    const sequenceTenant = sequencer.sequenceTenant.bind(sequencer);
    sequencer.sequenceTenant = (tenantId) =>
      tenantId === 'log-failing' ? Promise.reject(new Error('a broken tile')) : sequenceTenant(tenantId);
    const batches = await sequencer.sequenceOnce();
    expect(batches).toContainEqual({ tenantId: 'log-healthy', leaves: 4, treeSize: 4 });
    expect(batches.map((batch) => batch.tenantId)).not.toContain('log-failing');
    const queued = await storage()
      .db.selectFrom('log_leaf_queue')
      .select('tenant_id')
      .where('tenant_id', 'in', ['log-failing', 'log-healthy'])
      .execute();
    expect(queued.map((row) => row.tenant_id)).toEqual([
      'log-failing',
      'log-failing',
      'log-failing',
      'log-failing',
    ]);
  });

  it('appends exactly the records it read: one queued since, even earlier in the queue, waits for the next batch', async () => {
    const tenant = 'log-listed';
    const own = Array.from({ length: 3 }, (_, n) => testRecord(tenant, n));
    await logRecords(storage(), own);
    const queued = await selectQueuedLeaves(storage().db, tenant, 10);
    expect(queued).toHaveLength(3);
    const [first, second, third] = queued as [QueuedLeaf, QueuedLeaf, QueuedLeaf];
    if (kind === 'sqlite') {
      const db = storage().db;
      // One primary-key lookup in the queue per listed key: with the queue scanned outside instead, the
      // insert is quadratic, holding the connection every request's commit waits for.
      const insert = listedLeavesInsert(tenant, 0, '[]').compile(db);
      const plan = await db.executeQuery<{ detail: string }>(
        CompiledQuery.raw(`explain query plan ${insert.sql}`, [...insert.parameters]),
      );
      expect(plan.rows.map((row) => row.detail)).toEqual([
        expect.stringMatching(/^SCAN listed VIRTUAL TABLE/),
        'SEARCH queued USING PRIMARY KEY (tenant_id=? AND created_at=? AND cid=?)',
      ]);
      // A listed record that is not queued (any more): the transaction rolls back, nothing is written.
      const gone = { ...third, createdAt: '9999-12-31T23:59:59.999Z' };
      await expect(
        db.transaction().execute((trx) => appendListedLeaves(trx, tenant, 0, [first, gone])),
      ).rejects.toThrow(LogMovedError);
      expect(await selectQueuedLeaves(db, tenant, 10)).toEqual(queued);
      expect(await selectTreeSize(db, tenant)).toBe(0);
      // The first and third, as read before the second was queued: the second waits. (Rolled back after,
      // since these leaves come without the tiles and checkpoint the sequencer writes with them.)
      const rollBack = new Error('roll back');
      await expect(
        db.transaction().execute(async (trx) => {
          await appendListedLeaves(trx, tenant, 0, [first, third]);
          expect(await selectQueuedLeaves(trx, tenant, 10)).toEqual([second]);
          const leaves = await trx
            .selectFrom('log_leaves')
            .select(['cid', 'leaf_index'])
            .where('tenant_id', '=', tenant)
            .orderBy('leaf_index')
            .execute();
          expect(leaves.map((leaf) => [leaf.cid, Number(leaf.leaf_index)])).toEqual([
            [first.cid, 0],
            [third.cid, 1],
          ]);
          throw rollBack;
        }),
      ).rejects.toBe(rollBack);
    }
    await log.sequencer.sequenceTenant(tenant);
    expect(await selectQueuedLeaves(storage().db, tenant, 10)).toEqual([]);
    expect(await selectTreeSize(storage().db, tenant)).toBe(3);
  });

  it('detects a record or a hash altered behind its back: inclusion and consistency fail, naming the leaf', async () => {
    const tenant = 'log-tampered';
    const own = Array.from({ length: 300 }, (_, n) => testRecord(tenant, n));
    await logRecords(storage(), own.slice(0, 100));
    await log.sequencer.sequenceOnce();
    const before = await verified(await findCheckpoint(storage().db, tenant), log.signer, tenant);
    await logRecords(storage(), own.slice(100));
    await log.sequencer.sequenceOnce();
    const db = storage().db;
    // As someone with database access would: around the triggers.
    const triggers = (on: boolean) =>
      kind === 'postgres'
        ? sql
            .raw(
              `ALTER TABLE log_records ${on ? 'ENABLE' : 'DISABLE'} TRIGGER USER; ALTER TABLE log_tiles ${on ? 'ENABLE' : 'DISABLE'} TRIGGER USER`,
            )
            .execute(db)
        : on
          ? Promise.resolve()
          : sql
              .raw('DROP TRIGGER log_records_erase_only')
              .execute(db)
              .then(() => sql.raw('DROP TRIGGER log_tiles_no_update').execute(db));
    await triggers(false);
    try {
      const victim = own[42] as (typeof own)[number];
      const altered = new TextEncoder().encode(
        new TextDecoder().decode(victim.bytes).replace('"n":42', '"n":24'),
      );
      await db
        .updateTable('log_records')
        .set({ bytes: altered })
        .where('tenant_id', '=', tenant)
        .where('cid', '=', victim.cid)
        .execute();
      const proof = await proveInclusion(db, tenant, victim.cid);
      const latest = await verified(proof.checkpoint, log.signer, tenant);
      const stored = await db
        .selectFrom('log_records')
        .select('bytes')
        .where('tenant_id', '=', tenant)
        .where('cid', '=', victim.cid)
        .executeTakeFirstOrThrow();
      await expect(verifyInclusion(stored.bytes, inclusionProofView(proof), latest)).rejects.toThrow(
        new RegExp(`^leaf ${proof.leafIndex}: `),
      );

      // A leaf hash rewritten in its tile: the tree no longer extends the checkpoint signed before.
      const tile = await widestLeafTile(db, tenant);
      const hashes = Buffer.from(tile.hashes);
      hashes[7 * 32] = (hashes[7 * 32] as number) ^ 0xff;
      await db
        .updateTable('log_tiles')
        .set({ hashes })
        .where('tenant_id', '=', tenant)
        .where('level', '=', 0)
        .where('width', '=', tile.width)
        .execute();
      // The proofs above filled this process's TileHashCache with this tile's inner hashes: they are not
      // used for the altered bytes.
      const consistency = await proveConsistency(db, tenant, before.treeSize, latest.treeSize);
      await expect(
        verifyConsistency(
          before,
          latest,
          consistency.path.map((hash) => Buffer.from(hash).toString('base64')),
        ),
      ).rejects.toThrow(LogProofError);
    } finally {
      if (kind === 'postgres') await triggers(true);
    }
    expect(await selectCheckpoint(db, tenant)).toMatchObject({ treeSize: 300 });
  });
});
