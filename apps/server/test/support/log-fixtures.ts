import { randomBytes } from 'node:crypto';
import { type VerifiedCheckpoint, verifyCheckpoint } from '@scenario-scoring/client';
import { cidOfBytes } from '@scenario-scoring/engine';
import { NoteSigner } from '@scenario-scoring/tlog';
import type { Kysely } from 'kysely';
import { systemClock } from '../../src/common/clock.js';
import { silentLogger } from '../../src/request-logging/logger.js';
import { RunLogCompletion } from '../../src/runs/run-log-completion.js';
import { logRowInserts } from '../../src/score-log/score-log-store.js';
import type { Database } from '../../src/storage/database.js';
import type { Storage } from '../../src/storage/storage.js';
import { LogSequencer } from '../../src/verifiable-log/log-sequencer.js';
import type { StoredCheckpoint } from '../../src/verifiable-log/verifiable-log-store.js';
import { testFeatures } from './test-features.js';

export const TEST_LOG_ORIGIN = 'test.example/scenario-scoring';

/** A record of `tenant` with distinct bytes, as the score log stores one. */
export function testRecord(
  tenantId: string,
  n: number,
): { tenantId: string; cid: string; bytes: Uint8Array } {
  const bytes = new TextEncoder().encode(JSON.stringify({ n, tenant: tenantId, schema: 'test-log/1' }));
  return { tenantId, cid: cidOfBytes(bytes), bytes };
}

/**
 * Logs records: the even ones as scorings do (the group commit), the odd ones as run batches do (their
 * rows, sharing a request id, in a transaction of their own: `logRowInserts` through `transact`), so both
 * paths end in the log.
 */
export async function logRecords(storage: Storage, records: ReturnType<typeof testRecord>[]): Promise<void> {
  const now = new Date();
  const scorings = records.filter((_, i) => i % 2 === 0);
  const runItems = records.filter((_, i) => i % 2 === 1);
  const { logs } = testFeatures(storage);
  await Promise.all([
    ...scorings.map((record) => logs.append({ ...record, requestId: 'req_test', createdAt: now })),
    storage.transact(
      logRowInserts(
        storage.db,
        runItems.map((record) => ({
          tenant_id: record.tenantId,
          cid: record.cid,
          bytes: record.bytes,
          request_id: 'run_test',
          created_at: now.toISOString(),
        })),
      ),
    ),
  ]);
}

/** A sequencer over `storage` with a fresh key, and that key. */
export function testSequencer(
  storage: Storage,
  signer = new NoteSigner('test-log', randomBytes(32)),
  config: { checkpointIntervalMs?: number; maxBatch?: number } = {},
) {
  const sequencer = new LogSequencer({
    storage,
    signer,
    config: { origin: TEST_LOG_ORIGIN, checkpointIntervalMs: 20, maxBatch: 100_000, ...config },
    clock: systemClock,
    logger: silentLogger,
  });
  return { sequencer, signer };
}

/** A stored checkpoint of `tenantId`'s log (signed by a testSequencer) verified by the client with the signer's verifier key. */
export async function verified(
  checkpoint: StoredCheckpoint,
  signer: NoteSigner,
  tenantId: string,
): Promise<VerifiedCheckpoint> {
  return verifyCheckpoint(checkpoint.note, await signer.verifierKey(), {
    origin: `${TEST_LOG_ORIGIN}/${tenantId}`,
  });
}

/** The tenant's widest level-0 tile (the leaf hashes), which the tamper tests rewrite. */
export function widestLeafTile(db: Kysely<Database>, tenantId: string) {
  return db
    .selectFrom('log_tiles')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('level', '=', 0)
    .orderBy('width', 'desc')
    .executeTakeFirstOrThrow();
}

/** The one key signAndReleaseRuns signs with, so its self-check accepts the checkpoints it signed before. */
const RUN_LOG_SIGNER = new NoteSigner('test-log', randomBytes(32));

/**
 * Signs every record waiting in the log (a test sequencer, rounds until nothing waits) and sends the
 * `run.completed` of every completed run whose records are now all signed, as the sequencer and the
 * run-log-completion worker of a running server do; answers how many events it sent.
 */
export async function signAndReleaseRuns(storage: Storage, signer = RUN_LOG_SIGNER): Promise<number> {
  const { sequencer } = testSequencer(storage, signer);
  while ((await sequencer.sequenceOnce()).length > 0);
  return new RunLogCompletion({
    db: storage.db,
    outbox: testFeatures(storage).outbox,
    clock: systemClock,
    logger: silentLogger,
    pollIntervalMs: 1000,
  }).releaseOnce();
}
