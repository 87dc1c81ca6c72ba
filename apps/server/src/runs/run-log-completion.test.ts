import { randomBytes } from 'node:crypto';
import type { RunCompletedEvent, ScoreRequest } from '@scenario-scoring/api-types';
import { verifyCheckpoint, verifyInclusion } from '@scenario-scoring/client';
import { waitUntil } from '@scenario-scoring/testkit';
import { NoteSigner } from '@scenario-scoring/tlog';
import { expect, it } from 'vitest';
import { signAndReleaseRuns, TEST_LOG_ORIGIN } from '../../test/support/log-fixtures.js';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testRunWorker } from '../../test/support/test-run-worker.js';
import { newId } from '../common/ids.js';
import { unpackRecord } from '../storage/record-codec.js';
import { proveInclusion } from '../verifiable-log/verifiable-log-service.js';
import { inclusionProofView } from '../verifiable-log/verifiable-log-views.js';
import { insertRun } from './run-store.js';

forEachDatabase('run.completed waits for the log', ({ storage }) => {
  it('is sent once every item is in a signed checkpoint, once, naming a checkpoint that holds every item', async () => {
    const tenant = 'run-logged';
    const signer = new NoteSigner('test-log', randomBytes(32));
    const db = storage().db;
    const id = newId('run');
    const items: ScoreRequest[] = Array.from({ length: 12 }, (_, i) => ({
      subject: `applicant-${i}`,
      context: { jurisdiction: 'DE', utilization: i / 12 },
    }));
    await db
      .transaction()
      .execute((trx) => insertRun(trx, { id, tenantId: tenant, items, now: new Date(), deadlineAt: null }));
    const worker = testRunWorker(storage(), { config: { batchSize: 5 } });
    worker.start();
    const runRow = () => db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    await waitUntil(async () => (await runRow()).status === 'completed', 15_000);
    await worker.stop();
    const events = async () =>
      (
        await db
          .selectFrom('events')
          .select('payload')
          .where('tenant_id', '=', tenant)
          .where('type', '=', 'run.completed')
          .execute()
      ).map((row) => JSON.parse(row.payload) as RunCompletedEvent);

    // Completed, but its records are not signed yet: no event.
    expect(await runRow()).toMatchObject({ status: 'completed', log_event_pending: 1 });
    expect(await events()).toEqual([]);

    expect(await signAndReleaseRuns(storage(), signer)).toBe(1);
    const [event] = await events();
    const named = event?.data.log_checkpoint;
    expect(named).toMatchObject({ origin: `${TEST_LOG_ORIGIN}/${tenant}`, tree_size: 12 });
    const checkpoint = await verifyCheckpoint(named?.note as string, await signer.verifierKey(), {
      origin: `${TEST_LOG_ORIGIN}/${tenant}`,
    });
    const records = await db
      .selectFrom('run_items')
      .innerJoin('log_records', (join) =>
        join.onRef('log_records.cid', '=', 'run_items.log_cid').on('log_records.tenant_id', '=', tenant),
      )
      .select(['log_records.cid', 'log_records.bytes'])
      .where('run_items.run_id', '=', id)
      .execute();
    expect(records).toHaveLength(12);
    for (const record of records) {
      const proof = await proveInclusion(db, tenant, record.cid, checkpoint.treeSize);
      await verifyInclusion(unpackRecord(record.bytes), inclusionProofView(proof), checkpoint);
    }
    // Sent once: the flag is cleared with the event.
    expect(await signAndReleaseRuns(storage(), signer)).toBe(0);
    expect(await events()).toHaveLength(1);
    expect(await runRow()).toMatchObject({ log_event_pending: 0 });
  });
});
