import { setTimeout as sleep } from 'node:timers/promises';
import {
  formatCheckpoint,
  type NewTile,
  type NoteSigner,
  type NoteVerifier,
  parseVerifierKey,
  signNote,
  TileTree,
  tilesForAppend,
  treeHash,
} from '@scenario-scoring/tlog';
import type { Kysely, Transaction } from 'kysely';
import type { Clock } from '../common/clock.js';
import { describeError, type Logger } from '../request-logging/logger.js';
import type { Database } from '../storage/database.js';
import type { Storage } from '../storage/storage.js';
import type { BackgroundWorker } from '../workers/background-worker.js';
import { checkSignedTree, LogForkRefusedError } from './log-self-check.js';
import type { VerifiableLogConfig } from './verifiable-log-config.js';
import {
  appendListedLeaves,
  appendQueuedLeaves,
  insertCheckpoint,
  insertLogFault,
  insertTiles,
  LogMovedError,
  lockTenantLog,
  type StoredCheckpoint,
  selectOpenLogFaults,
  selectQueuedLeaves,
  selectTenantsWithPendingRecords,
  selectTile,
  selectTreeSize,
} from './verifiable-log-store.js';

/** What one tenant's sequencing transaction did. */
/** A tree grown by a batch of leaves, to be written: its new tiles and its signed checkpoint. */
interface Growth {
  tiles: NewTile[];
  checkpoint: StoredCheckpoint;
  leaves: number;
}

export interface SequencedBatch {
  tenantId: string;
  /** Leaves added. */
  leaves: number;
  /** The tree size of the checkpoint it signed. */
  treeSize: number;
}

/** What the sequencer works with. */
export interface LogSequencerOptions {
  storage: Pick<Storage, 'db' | 'kind'>;
  signer: NoteSigner;
  config: Pick<VerifiableLogConfig, 'origin' | 'checkpointIntervalMs' | 'maxBatch'>;
  clock: Clock;
  logger: Logger;
  /** Told after each batch committed (checkpoint-signal.ts), so waiting scorings wake; none without it. */
  checkpoints?: { notify(tenantId: string): void };
  /** Counts the self-check's refusals (metrics.ts `logSelfCheckFailures`); none counted without it. */
  selfCheckFailures?: { inc(): void };
}

/**
 * Gives committed records their leaf indexes off the request path: every interval, for each tenant with
 * waiting records, it appends up to `maxBatch` leaves, stores the new tiles and signs a checkpoint of the
 * grown tree, all written in one transaction. On PostgreSQL that transaction takes the tenant's lock (an
 * advisory lock, so one instance at a time sequences a tenant) and reads and hashes inside it. On SQLite,
 * whose one connection every request's commit waits for, the reading and hashing come first and the
 * transaction only writes, after checking the tree did not grow meanwhile. Nothing is kept in memory
 * between batches: the tree is read from its tiles each time, so a crash mid-batch leaves the last
 * committed tree, and the next batch goes on from it.
 */
export class LogSequencer implements BackgroundWorker {
  readonly name = 'log-sequencer';
  readonly #options: LogSequencerOptions;
  #running = false;
  #stopping = new AbortController();
  #loop: Promise<void> | undefined;
  readonly #verifier: Promise<NoteVerifier>;

  constructor(options: LogSequencerOptions) {
    this.#options = options;
    this.#verifier = options.signer.verifierKey().then(parseVerifierKey);
    // Awaited by every batch; not an unhandled rejection before the first.
    this.#verifier.catch(() => {});
  }

  get running(): boolean {
    return this.#running;
  }

  start(): void {
    this.#running = true;
    this.#loop = this.#run();
  }

  async stop(): Promise<void> {
    this.#running = false;
    this.#stopping.abort();
    await this.#loop;
  }

  /**
   * One round: sequences a batch of every tenant with waiting records, one transaction each. A tenant
   * whose batch fails is logged and left to the next round (the batch rolled back as a whole); the others
   * are sequenced all the same. A tenant with an open self-check fault (log_faults, read once a round) is
   * skipped: nothing is signed for it until an operator clears the fault. A batch the self-check refuses
   * stores such a fault, logs it and counts it.
   */
  async sequenceOnce(): Promise<SequencedBatch[]> {
    const { storage, logger } = this.#options;
    const batches: SequencedBatch[] = [];
    const faulted = new Set((await selectOpenLogFaults(storage.db)).map((fault) => fault.tenantId));
    for (const tenantId of await selectTenantsWithPendingRecords(storage.db)) {
      if (faulted.has(tenantId)) continue;
      try {
        const batch = await this.sequenceTenant(tenantId);
        if (batch) {
          batches.push(batch);
          this.#options.checkpoints?.notify(tenantId);
        }
      } catch (error) {
        if (error instanceof LogForkRefusedError) await this.#refuse(tenantId, error);
        else logger.error('log sequencing failed', { tenantId, ...describeError(error) });
      }
    }
    return batches;
  }

  /** Stores, logs and counts a fault the self-check found; the tenant is skipped from then on. */
  async #refuse(tenantId: string, error: LogForkRefusedError): Promise<void> {
    const { storage, clock, logger, selfCheckFailures } = this.#options;
    const { fault } = error;
    selfCheckFailures?.inc();
    logger.error('log self-check failed: nothing signed for the tenant until an operator clears the fault', {
      tenantId,
      treeSize: fault.treeSize,
      firstIndex: fault.firstIndex,
      endIndex: fault.endIndex,
      reason: fault.reason,
    });
    try {
      await insertLogFault(storage.db, { tenantId, detectedAt: clock.now().toISOString(), ...fault });
    } catch (insertError) {
      // Not stored: the next round checks again, refuses again and tries to store it again.
      logger.error('log self-check fault not stored', { tenantId, ...describeError(insertError) });
    }
  }

  /** Appends up to `maxBatch` of the tenant's waiting records and signs the new tree; undefined when another instance holds the tenant or nothing waits. */
  async sequenceTenant(tenantId: string): Promise<SequencedBatch | undefined> {
    if (this.#options.storage.kind === 'sqlite') {
      try {
        return await this.#sequenceInShortTransaction(tenantId);
      } catch (error) {
        if (!(error instanceof LogMovedError)) throw error;
      }
    }
    return this.#sequenceInOneTransaction(tenantId);
  }

  /**
   * SQLite: reads the queued hashes and the tree's edge tiles, hashes the new tiles and the root and signs
   * the checkpoint first, then writes the leaves, tiles and checkpoint in a short transaction that checks
   * the tree did not grow meanwhile (LogMovedError otherwise, and nothing is written). The one SQLite
   * connection serves every request's commit: held for a whole batch's hashing (tens of ms a round at
   * thousands of leaves), it stalled every scoring in flight.
   */
  async #sequenceInShortTransaction(tenantId: string): Promise<SequencedBatch | undefined> {
    const { storage, config } = this.#options;
    const size = await selectTreeSize(storage.db, tenantId);
    const queued = await selectQueuedLeaves(storage.db, tenantId, config.maxBatch);
    if (queued.length === 0) return undefined;
    const growth = await this.#grow(
      storage.db,
      tenantId,
      size,
      queued.map((leaf) => leaf.leafHash),
    );
    return storage.db.transaction().execute(async (trx) => {
      if ((await selectTreeSize(trx, tenantId)) !== size) {
        throw new LogMovedError(`sequencing ${tenantId}: the tree grew from ${size} meanwhile`);
      }
      await appendListedLeaves(trx, tenantId, size, queued);
      return this.#store(trx, tenantId, growth);
    });
  }

  /** Reads, hashes and writes in one transaction, under the tenant's lock (PostgreSQL, and SQLite's fallback). */
  async #sequenceInOneTransaction(tenantId: string): Promise<SequencedBatch | undefined> {
    const { storage, config } = this.#options;
    return storage.db.transaction().execute(async (trx) => {
      if (!(await lockTenantLog(trx, storage.kind, tenantId))) return undefined;
      const size = await selectTreeSize(trx, tenantId);
      const leafHashes = await appendQueuedLeaves(trx, storage.kind, tenantId, size, config.maxBatch);
      if (leafHashes.length === 0) return undefined;
      return this.#store(trx, tenantId, await this.#grow(trx, tenantId, size, leafHashes));
    });
  }

  /**
   * The tree of `size` leaves grown by `leafHashes`, read through `db`: its new tiles, and its checkpoint,
   * signed.
   */
  async #grow(
    db: Kysely<Database>,
    tenantId: string,
    size: number,
    leafHashes: readonly Uint8Array[],
  ): Promise<Growth> {
    const { signer, config } = this.#options;
    const tree = new TileTree((level, index) => selectTile(db, tenantId, level, index));
    // Before anything is signed: the tree read is the one last signed (the append reads the same tiles).
    await checkSignedTree(db, tenantId, tree, size, await this.#verifier);
    const tiles = await tilesForAppend(tree, size, leafHashes);
    const treeSize = size + leafHashes.length;
    const rootHash = await treeHash(tree, treeSize);
    const note = await signNote(
      formatCheckpoint({ origin: `${config.origin}/${tenantId}`, treeSize, rootHash }),
      signer,
    );
    return { tiles, checkpoint: { treeSize, rootHash, note }, leaves: leafHashes.length };
  }

  /** Writes a grown tree's tiles and checkpoint. */
  async #store(trx: Transaction<Database>, tenantId: string, growth: Growth): Promise<SequencedBatch> {
    await insertTiles(trx, tenantId, growth.tiles);
    await insertCheckpoint(trx, tenantId, growth.checkpoint, this.#options.clock.now());
    return { tenantId, leaves: growth.leaves, treeSize: growth.checkpoint.treeSize };
  }

  async #run(): Promise<void> {
    const { config, logger } = this.#options;
    while (this.#running) {
      let behind = false;
      try {
        const batches = await this.sequenceOnce();
        // A batch was full, so its tenant may have more waiting: another round at once (every tenant's
        // turn again), not after the interval. Batches stay short, since a batch holds the one SQLite connection that
        // every scoring's commit waits for.
        behind = batches.some((batch) => batch.leaves >= config.maxBatch);
      } catch (error) {
        // The tenants could not be listed (a failed batch is logged by sequenceOnce); the next round tries again.
        logger.error('log sequencing failed', describeError(error));
      }
      if (behind) {
        await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      try {
        await sleep(config.checkpointIntervalMs, undefined, { signal: this.#stopping.signal });
      } catch {
        // Aborted by stop().
      }
    }
  }
}
