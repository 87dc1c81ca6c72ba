import { setTimeout as sleep } from 'node:timers/promises';
import {
  equalHashes,
  formatCheckpoint,
  type LoadedPolicy,
  loadPolicy,
  type NoteSigner,
  proveTree,
  quorumSatisfied,
  recordHash,
  sha256,
  signNote,
  TileTree,
  tilesForAppend,
  treeHash,
} from '@scenario-scoring/tlog';
import type { Kysely } from 'kysely';
import type { Clock } from '../common/clock.js';
import { describeError, type Logger } from '../request-logging/logger.js';
import type { Database } from '../storage/database.js';
import type { Storage } from '../storage/storage.js';
import type { BackgroundWorker } from '../workers/background-worker.js';
import {
  appendRootLeaves,
  insertCosignature,
  insertRootCheckpoint,
  insertRootTiles,
  lockRootLog,
  type StoredCosignature,
  selectCosignatures,
  selectQueuedTenantCheckpoints,
  selectRecentRootCheckpoints,
  selectRootCheckpoint,
  selectRootTile,
  selectRootTiles,
  selectRootTreeSize,
} from './root-log-store.js';
import type { VerifiableLogConfig } from './verifiable-log-config.js';
import type { StoredCheckpoint } from './verifiable-log-store.js';
import { WitnessClient } from './witness-client.js';

/** How often the root log looks for new tenant checkpoints at most (a round on an empty queue is one probe). */
const ROOT_INTERVAL_MS = 200;
/** How many recent root checkpoints fail-closed looks through for one that a quorum cosigned. */
const WITNESSED_LOOKBACK = 64;

/**
 * The root log's leaf for a tenant checkpoint: the 32 bytes SHA-256(its signed note, UTF-8). A hash, so
 * that root proofs and tiles show no tenant's origin line; a tenant (or its auditor) recomputes it from the
 * checkpoint it holds.
 */
export async function rootLeaf(tenantCheckpointNote: string): Promise<Uint8Array> {
  return sha256(new TextEncoder().encode(tenantCheckpointNote));
}

/** The root tree, read through `db`. */
export function rootTree(db: Kysely<Database>): TileTree {
  return new TileTree((level, index) => selectRootTile(db, level, index), {
    readBatch: (tiles) => selectRootTiles(db, tiles),
  });
}

/** A root checkpoint as served: the log's note with the stored cosignature lines appended. */
export interface CosignedCheckpoint extends StoredCheckpoint {
  /** Key names of the witnesses whose cosignature lines `note` carries. */
  cosigners: string[];
}

/** What the root log works with. */
export interface RootLogOptions {
  storage: Pick<Storage, 'db' | 'kind'>;
  signer: NoteSigner;
  config: Pick<VerifiableLogConfig, 'origin' | 'maxBatch' | 'witnessTimeoutMs'>;
  /** The witness policy (C2SP tlog-policy text, checked by the config); undefined: no witnesses. */
  policyText: string | undefined;
  clock: Clock;
  logger: Logger;
  /**
   * Counts a refused round (the stored root tree no longer gives the signed root): the same counter as the
   * tenant logs' self-check, `scenario_scoring_log_self_check_failures_total`.
   */
  selfCheckFailures?: { inc(): void };
}

/**
 * The root log's worker: every round, under one lock across instances, it checks that the stored root
 * tree still gives the last signed root (RootLogMismatchError and nothing signed otherwise), appends the
 * queued tenant checkpoints (up to `maxBatch`) as leaves of the root tree (origin LOG_ORIGIN), stores its
 * tiles and signs its checkpoint in one transaction; then it sends the latest root checkpoint to every policy witness that
 * has a URL and has not cosigned it yet (C2SP tlog-witness), storing the cosignatures that verify.
 */
export class RootLog implements BackgroundWorker {
  readonly name = 'root-log';
  readonly #options: RootLogOptions;
  #witnesses: WitnessClient[] = [];
  #running = false;
  #stopping = new AbortController();
  #loop: Promise<void> | undefined;

  constructor(options: RootLogOptions) {
    this.#options = options;
  }

  /** Loads the policy's keys and makes a client per witness with a URL (once, before the first round). */
  async #loadWitnesses(): Promise<void> {
    const { policyText, logger, config } = this.#options;
    if (policyText === undefined) return;
    const policy = await loadPolicy(policyText);
    this.#witnesses = policy.policy.witnesses.flatMap((witness) => {
      const verifier = policy.witnesses.get(witness.name);
      return witness.url && verifier
        ? [
            new WitnessClient(
              { name: witness.name, url: witness.url, verifier },
              logger,
              config.witnessTimeoutMs,
            ),
          ]
        : [];
    });
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

  /** Appends the queued tenant checkpoints and signs the grown root tree; the new size, or undefined. */
  async sequenceOnce(): Promise<number | undefined> {
    const { storage, signer, config, clock } = this.#options;
    return storage.db.transaction().execute(async (trx) => {
      if (!(await lockRootLog(trx, storage.kind))) return undefined;
      const queued = await selectQueuedTenantCheckpoints(trx, config.maxBatch);
      if (queued.length === 0) return undefined;
      const size = await selectRootTreeSize(trx);
      try {
        await checkSignedRoot(trx, size);
      } catch (error) {
        if (error instanceof RootLogMismatchError) {
          this.#options.selfCheckFailures?.inc();
          this.#options.logger.error('root log self-check failed: nothing signed', { reason: error.message });
        }
        throw error;
      }
      const leaves = await Promise.all(queued.map(async (q) => recordHash(await rootLeaf(q.note))));
      const tree = rootTree(trx);
      const tiles = await tilesForAppend(tree, size, leaves);
      await insertRootTiles(trx, tiles);
      const treeSize = size + leaves.length;
      const rootHash = await treeHash(rootTree(trx), treeSize);
      const note = await signNote(formatCheckpoint({ origin: config.origin, treeSize, rootHash }), signer);
      await appendRootLeaves(trx, size, queued);
      await insertRootCheckpoint(trx, { treeSize, rootHash, note }, clock.now());
      return treeSize;
    });
  }

  /**
   * Sends the latest root checkpoint to each witness without a stored cosignature of it, all at once;
   * stores the cosignatures got. Resolves with the key names of the witnesses that cosigned it so far.
   */
  async witnessLatest(): Promise<string[]> {
    const { storage, clock, logger } = this.#options;
    const latest = await selectRootCheckpoint(storage.db);
    if (!latest || this.#witnesses.length === 0) return [];
    const have = new Set((await selectCosignatures(storage.db, latest.treeSize)).map((c) => c.witness));
    await Promise.all(
      this.#witnesses.map(async (client) => {
        const keyName = client.endpoint.verifier.name;
        if (have.has(keyName)) return;
        const outcome = await client.submit(latest.note, latest.treeSize, (old) =>
          proveTree(rootTree(storage.db), latest.treeSize, old),
        );
        if (outcome.kind === 'ahead') {
          // Benign when this log signed that size (another instance sent it first); otherwise the witness
          // saw a larger tree than this database holds: a rollback (a restored backup) or a fork.
          if (!(await selectRootCheckpoint(storage.db, outcome.size))) {
            logger.error('witness holds a larger tree than the root log', {
              witness: client.endpoint.name,
              treeSize: latest.treeSize,
              witnessSize: outcome.size,
            });
          }
          return;
        }
        if (outcome.kind !== 'cosigned') return;
        await insertCosignature(
          storage.db,
          latest.treeSize,
          { witness: keyName, line: outcome.line },
          clock.now(),
        );
        have.add(keyName);
      }),
    );
    return [...have];
  }

  async #run(): Promise<void> {
    const { logger } = this.#options;
    try {
      await this.#loadWitnesses();
    } catch (error) {
      logger.error('the witness policy could not be loaded', describeError(error));
    }
    while (this.#running) {
      try {
        await this.sequenceOnce();
      } catch (error) {
        logger.error('root log sequencing failed', describeError(error));
      }
      try {
        await this.witnessLatest();
      } catch (error) {
        logger.error('root log witnessing failed', describeError(error));
      }
      try {
        await sleep(ROOT_INTERVAL_MS, undefined, { signal: this.#stopping.signal });
      } catch {
        // Aborted by stop().
      }
    }
  }
}

/** Thrown when the stored root tree no longer gives the root the log key signed: nothing is signed then. */
export class RootLogMismatchError extends Error {
  override readonly name = 'RootLogMismatchError';
}

/**
 * The root log's self-check before it signs: the root of the stored tree at the latest signed size must be
 * the signed root hash, and the stored leaves must be as many as that size or more. Throws a
 * RootLogMismatchError otherwise (the database was edited behind the server's back), so the key never
 * signs a tree inconsistent with what it signed before.
 */
async function checkSignedRoot(db: Kysely<Database>, size: number): Promise<void> {
  const signed = await selectRootCheckpoint(db);
  if (!signed) return;
  if (size < signed.treeSize) {
    throw new RootLogMismatchError(
      `the root log holds ${size} leaves, below its signed size ${signed.treeSize}`,
    );
  }
  const stored = await treeHash(rootTree(db), signed.treeSize);
  if (!equalHashes(stored, signed.rootHash)) {
    throw new RootLogMismatchError(
      `the stored root tree of size ${signed.treeSize} no longer has the signed root hash: leaves 0 to ${signed.treeSize - 1} were edited`,
    );
  }
}

/** `stored`'s note with the cosignature lines `cosignatures` appended. */
export function withCosignatures(
  stored: StoredCheckpoint,
  cosignatures: StoredCosignature[],
): CosignedCheckpoint {
  return {
    ...stored,
    note: stored.note + cosignatures.map((c) => c.line).join(''),
    cosigners: cosignatures.map((c) => c.witness),
  };
}

/**
 * The root checkpoint to serve: fail-open (or without a policy), the latest, with its cosignatures;
 * fail-closed, the latest among the recent ones whose cosigners satisfy the policy's quorum. `atLeast`:
 * only checkpoints of that many leaves or more. Undefined when there is none.
 */
export async function servedRootCheckpoint(
  db: Kysely<Database>,
  policy: LoadedPolicy | undefined,
  mode: 'fail-open' | 'fail-closed',
  atLeast = 0,
): Promise<CosignedCheckpoint | undefined> {
  if (mode === 'fail-open' || !policy) {
    const latest = await selectRootCheckpoint(db);
    if (!latest || latest.treeSize < atLeast) return undefined;
    return withCosignatures(latest, await selectCosignatures(db, latest.treeSize));
  }
  const byKeyName = new Map([...policy.witnesses].map(([name, verifier]) => [verifier.name, name]));
  for (const candidate of await selectRecentRootCheckpoints(db, WITNESSED_LOOKBACK)) {
    if (candidate.treeSize < atLeast) break;
    const cosignatures = await selectCosignatures(db, candidate.treeSize);
    const witnessed = new Set(cosignatures.flatMap((c) => byKeyName.get(c.witness) ?? []));
    if (quorumSatisfied(policy.policy, witnessed)) return withCosignatures(candidate, cosignatures);
  }
  return undefined;
}
