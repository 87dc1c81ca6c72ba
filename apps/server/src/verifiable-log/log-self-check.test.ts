import { randomBytes } from 'node:crypto';
import { verifyConsistency } from '@scenario-scoring/client';
import { NoteSigner, parseVerifierKey } from '@scenario-scoring/tlog';
import { sql } from 'kysely';
import { expect, it } from 'vitest';
import { logRecords, TEST_LOG_ORIGIN, testRecord, verified } from '../../test/support/log-fixtures.js';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { startTestServer } from '../../test/support/test-server.js';
import { systemClock } from '../common/clock.js';
import { createMetrics } from '../metrics/metrics.js';
import { silentLogger } from '../request-logging/logger.js';
import type { Storage } from '../storage/storage.js';
import { clearLogFault } from './log-self-check.js';
import { LogSequencer } from './log-sequencer.js';
import { findCheckpoint, proveConsistency } from './verifiable-log-service.js';
import { selectCheckpoint, selectOpenLogFaults } from './verifiable-log-store.js';

const REFUSAL = 'the verifiable log is append-only';

forEachDatabase('the log self-check', ({ storage, kind, reopen }) => {
  const signer = new NoteSigner('test-log', randomBytes(32));
  const metrics = createMetrics({ processMetrics: false });
  const sequencer = (on: Storage) =>
    new LogSequencer({
      storage: on,
      signer,
      config: { origin: TEST_LOG_ORIGIN, checkpointIntervalMs: 20, maxBatch: 100_000 },
      clock: systemClock,
      logger: silentLogger,
      selfCheckFailures: metrics.logSelfCheckFailures,
    });
  const refusals = async () =>
    (await metrics.registry.getSingleMetric('scenario_scoring_log_self_check_failures_total')?.get())
      ?.values[0]?.value;

  /** Rewrites tile (0, index)'s widest copy as a database owner can: around the append-only triggers. */
  async function rewriteLeafTile(
    on: Storage,
    tenantId: string,
    index: number,
    edit: (hashes: Buffer) => Buffer,
  ): Promise<void> {
    const { db } = on;
    const tile = await db
      .selectFrom('log_tiles')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('level', '=', 0)
      .where('tile_index', '=', index)
      .orderBy('width', 'desc')
      .executeTakeFirstOrThrow();
    await sql
      .raw(
        kind === 'postgres'
          ? 'ALTER TABLE log_tiles DISABLE TRIGGER USER'
          : 'DROP TRIGGER log_tiles_no_update',
      )
      .execute(db);
    try {
      await db
        .updateTable('log_tiles')
        .set({ hashes: edit(Buffer.from(tile.hashes)) })
        .where('tenant_id', '=', tenantId)
        .where('level', '=', 0)
        .where('tile_index', '=', index)
        .where('width', '=', tile.width)
        .execute();
    } finally {
      await sql
        .raw(
          kind === 'postgres'
            ? 'ALTER TABLE log_tiles ENABLE TRIGGER USER'
            : `CREATE TRIGGER log_tiles_no_update BEFORE UPDATE ON log_tiles BEGIN SELECT RAISE(ABORT, '${REFUSAL}'); END`,
        )
        .execute(db);
    }
  }

  it('signs nothing on a leaf hash edited behind its back, says so in /readyz and the metric, across a restart, until an operator clears it after restoring the data', async () => {
    const tenant = 'log-forked';
    const bystander = 'log-sound';
    const own = Array.from({ length: 316 }, (_, n) => testRecord(tenant, n));
    let log = sequencer(storage());
    // Checkpoints of 100, 150, 270, 290 and 300 leaves: the earlier ones narrow the range down.
    for (const [from, to] of [
      [0, 100],
      [100, 150],
      [150, 270],
      [270, 290],
      [290, 300],
    ] as const) {
      await logRecords(storage(), own.slice(from, to));
      await log.sequenceOnce();
    }
    const signed = await verified(await findCheckpoint(storage().db, tenant), signer, tenant);
    expect(signed.treeSize).toBe(300);

    // Leaf 276 (entry 20 of tile 0/1, the right edge the next append builds on) changes one bit.
    let original: Buffer | undefined;
    await rewriteLeafTile(storage(), tenant, 1, (hashes) => {
      original = Buffer.from(hashes);
      hashes[20 * 32] = (hashes[20 * 32] as number) ^ 0x01;
      return hashes;
    });
    await logRecords(storage(), own.slice(300, 308));
    await logRecords(storage(), [testRecord(bystander, 0)]);
    const round = await log.sequenceOnce();
    // The other tenant's log is signed as ever; the edited one is not.
    expect(round.map((batch) => batch.tenantId)).toEqual([bystander]);
    expect(await selectCheckpoint(storage().db, tenant)).toMatchObject({ treeSize: 300 });
    expect(await refusals()).toBe(1);
    const [fault] = await selectOpenLogFaults(storage().db);
    expect(fault).toMatchObject({ tenantId: tenant, treeSize: 300, firstIndex: 270, endIndex: 290 });
    expect(fault?.reason).toMatch(/root of the stored tree of 300 leaves differs/);

    // The refusal is stored: later rounds and a restarted instance skip the tenant without checking again.
    expect(await log.sequenceOnce()).toEqual([]);
    expect(await refusals()).toBe(1);
    const restarted = await reopen();
    log = sequencer(restarted);
    expect(await log.sequenceOnce()).toEqual([]);
    expect(await selectCheckpoint(restarted.db, tenant)).toMatchObject({ treeSize: 300 });

    const server = await startTestServer({ storage: restarted });
    try {
      const notReady = await server.request('/readyz');
      expect(notReady.status).toBe(503);
      const body = await notReady.json();
      expect(body).toMatchObject({
        status: 'unavailable',
        checks: { database: true, migrations: true, workers: true, log: false },
        log_faults: [{ first_index: 270, end_index: 290, tree_size: 300 }],
      });
      expect(JSON.stringify(body)).not.toContain(tenant);

      // The operator's action: refused while the data still does not match, accepted once restored.
      const verifier = await parseVerifierKey(await signer.verifierKey());
      expect(await clearLogFault(restarted.db, tenant, verifier, new Date())).toMatchObject({
        refused: { firstIndex: 270, endIndex: 290 },
      });
      expect(await log.sequenceOnce()).toEqual([]);
      await rewriteLeafTile(restarted, tenant, 1, () => original as Buffer);
      expect(await clearLogFault(restarted.db, tenant, verifier, new Date())).toEqual({ cleared: 1 });
      expect((await server.request('/readyz')).status).toBe(200);
    } finally {
      await server.close();
    }
    expect(await log.sequenceOnce()).toEqual([{ tenantId: tenant, leaves: 8, treeSize: 308 }]);
    const next = await verified(await findCheckpoint(restarted.db, tenant), signer, tenant);
    const proof = await proveConsistency(restarted.db, tenant, 300, 308);
    await verifyConsistency(
      signed,
      next,
      proof.path.map((hash) => Buffer.from(hash).toString('base64')),
    );
  }, 60_000);

  it('is not fooled by a root hash column rewritten to match: it reads the signed note', async () => {
    const tenant = 'log-rewritten-root';
    const own = Array.from({ length: 12 }, (_, n) => testRecord(tenant, n));
    const log = sequencer(storage());
    await logRecords(storage(), own.slice(0, 10));
    await log.sequenceOnce();
    await rewriteLeafTile(storage(), tenant, 0, (hashes) => {
      hashes[3 * 32] = (hashes[3 * 32] as number) ^ 0x01;
      return hashes;
    });
    const { db } = storage();
    await sql
      .raw(
        kind === 'postgres'
          ? 'ALTER TABLE log_checkpoints DISABLE TRIGGER USER'
          : 'DROP TRIGGER log_checkpoints_no_update',
      )
      .execute(db);
    try {
      // Whatever the column says, the note states the signed root.
      await db
        .updateTable('log_checkpoints')
        .set({ root_hash: new Uint8Array(32) })
        .where('tenant_id', '=', tenant)
        .execute();
    } finally {
      await sql
        .raw(
          kind === 'postgres'
            ? 'ALTER TABLE log_checkpoints ENABLE TRIGGER USER'
            : `CREATE TRIGGER log_checkpoints_no_update BEFORE UPDATE ON log_checkpoints BEGIN SELECT RAISE(ABORT, '${REFUSAL}'); END`,
        )
        .execute(db);
    }
    await logRecords(storage(), own.slice(10));
    expect(await log.sequenceOnce()).toEqual([]);
    expect(await selectOpenLogFaults(db, tenant)).toMatchObject([
      { treeSize: 10, firstIndex: 0, endIndex: 10 },
    ]);
  });
});
