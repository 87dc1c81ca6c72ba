import { randomBytes } from 'node:crypto';
import { NoteSigner } from '@scenario-scoring/tlog';
import { sql } from 'kysely';
import { expect, it } from 'vitest';
import { logRecords, TEST_LOG_ORIGIN, testRecord, testSequencer } from '../../test/support/log-fixtures.js';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { systemClock } from '../common/clock.js';
import { silentLogger } from '../request-logging/logger.js';
import { RootLog, RootLogMismatchError } from './root-log.js';
import { selectRootCheckpoint } from './root-log-store.js';

forEachDatabase('the root log self-check', ({ storage, kind }) => {
  it('signs nothing once a stored root tile was edited behind its back', async () => {
    const db = storage().db;
    const tenantLog = testSequencer(storage(), new NoteSigner(TEST_LOG_ORIGIN, randomBytes(32)));
    let refused = 0;
    const root = new RootLog({
      storage: storage(),
      signer: tenantLog.signer,
      config: { origin: TEST_LOG_ORIGIN, maxBatch: 1000, witnessTimeoutMs: 1000 },
      policyText: undefined,
      clock: systemClock,
      logger: silentLogger,
      selfCheckFailures: {
        inc() {
          refused += 1;
        },
      },
    });
    for (let round = 0; round < 3; round++) {
      await logRecords(storage(), [testRecord('selfcheck-alice', round)]);
      await tenantLog.sequencer.sequenceOnce();
      await root.sequenceOnce();
    }
    expect((await selectRootCheckpoint(db))?.treeSize).toBe(3);
    // A database owner drops the append-only trigger and rewrites the root's leaf tile.
    await sql
      .raw(`DROP TRIGGER root_log_tiles_no_update${kind === 'postgres' ? ' ON root_log_tiles' : ''}`)
      .execute(db);
    const tile = await db
      .selectFrom('root_log_tiles')
      .selectAll()
      .where('level', '=', 0)
      .orderBy('width', 'desc')
      .executeTakeFirstOrThrow();
    const altered = Buffer.from(tile.hashes);
    altered[0] = (altered[0] as number) ^ 1;
    await db
      .updateTable('root_log_tiles')
      .set({ hashes: altered })
      .where('level', '=', 0)
      .where('tile_index', '=', 0)
      .execute();
    await logRecords(storage(), [testRecord('selfcheck-alice', 9)]);
    await tenantLog.sequencer.sequenceOnce();
    await expect(root.sequenceOnce()).rejects.toThrow(RootLogMismatchError);
    await expect(root.sequenceOnce()).rejects.toThrow(/no longer has the signed root hash/);
    // Each refused round is counted (scenario_scoring_log_self_check_failures_total).
    expect(refused).toBe(2);
    expect((await selectRootCheckpoint(db))?.treeSize).toBe(3);
    expect(await db.selectFrom('root_log_queue').selectAll().execute()).toHaveLength(1);
  });
});
