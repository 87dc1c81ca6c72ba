import { type LoadedPolicy, proveRecord, proveTree } from '@scenario-scoring/tlog';
import type { Kysely } from 'kysely';
import { AppError } from '../errors/app-error.js';
import type { Database } from '../storage/database.js';
import { type CosignedCheckpoint, rootTree, servedRootCheckpoint, withCosignatures } from './root-log.js';
import { selectCosignatures, selectRootCheckpoint, selectRootLeafIndex } from './root-log-store.js';
import { findCheckpoint } from './verifiable-log-service.js';
import type { StoredCheckpoint } from './verifiable-log-store.js';

/** How long a client should wait before asking again for a root checkpoint not made yet. */
const RETRY_AFTER_SECONDS = 1;

/** Which witness policy and mode decide the root checkpoint served. */
export interface RootLogView {
  policy: LoadedPolicy | undefined;
  mode: 'fail-open' | 'fail-closed';
}

/** A tenant checkpoint's inclusion in a served root checkpoint. */
export interface RootInclusionProof {
  tenantCheckpoint: StoredCheckpoint;
  leafIndex: number;
  path: Uint8Array[];
  rootCheckpoint: CosignedCheckpoint;
}

/** The root checkpoint served now (see servedRootCheckpoint), or 404 `checkpoint_not_found` with Retry-After. */
export async function findRootCheckpoint(
  db: Kysely<Database>,
  view: RootLogView,
): Promise<CosignedCheckpoint> {
  const served = await servedRootCheckpoint(db, view.policy, view.mode);
  if (served) return served;
  throw new AppError('checkpoint_not_found', {
    detail:
      view.mode === 'fail-closed'
        ? 'No root checkpoint is cosigned by a quorum of the witnesses yet.'
        : 'The root log has no signed checkpoint yet.',
    headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
  });
}

/**
 * The inclusion of the tenant's checkpoint of `treeSize` leaves (by default its latest in the root log) in
 * the served root checkpoint. 404 for a tenant size without a checkpoint; 409 `log_record_not_sequenced`
 * with Retry-After while the checkpoint is not in a served root checkpoint yet.
 */
export async function proveRootInclusion(
  db: Kysely<Database>,
  view: RootLogView,
  tenantId: string,
  treeSize?: number,
): Promise<RootInclusionProof> {
  const tenantCheckpoint = await (treeSize === undefined
    ? latestRootedCheckpoint(db, tenantId)
    : findCheckpoint(db, tenantId, treeSize));
  const leafIndex = await selectRootLeafIndex(db, tenantId, tenantCheckpoint.treeSize);
  const rootCheckpoint =
    leafIndex === undefined
      ? undefined
      : await servedRootCheckpoint(db, view.policy, view.mode, leafIndex + 1);
  if (leafIndex === undefined || rootCheckpoint === undefined) {
    throw new AppError('log_record_not_sequenced', {
      detail: `Your checkpoint of tree size ${tenantCheckpoint.treeSize} is not in a served root checkpoint yet; ask again after Retry-After seconds.`,
      headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
    });
  }
  const path = await proveRecord(rootTree(db), rootCheckpoint.treeSize, leafIndex);
  return { tenantCheckpoint, leafIndex, path, rootCheckpoint };
}

/** The tenant's latest checkpoint that has a root leaf, else its latest checkpoint (then not rooted yet). */
async function latestRootedCheckpoint(db: Kysely<Database>, tenantId: string): Promise<StoredCheckpoint> {
  const row = await db
    .selectFrom('root_log_leaves')
    .select((eb) => eb.fn.max('tree_size').as('size'))
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst();
  const size = row?.size === null || row?.size === undefined ? undefined : Number(row.size);
  return findCheckpoint(db, tenantId, size);
}

/** The proof that the root checkpoint of `to` leaves extends the one of `from` leaves, with both. */
export async function proveRootConsistency(
  db: Kysely<Database>,
  from: number,
  to: number,
): Promise<{ path: Uint8Array[]; from: CosignedCheckpoint; to: CosignedCheckpoint }> {
  if (from > to) {
    throw new AppError('tree_size_too_small', {
      detail: `A consistency proof goes from a smaller tree to a larger one; to (${to}) is below from (${from}).`,
    });
  }
  const load = async (size: number) => {
    const stored = await selectRootCheckpoint(db, size);
    if (!stored) {
      throw new AppError('checkpoint_not_found', {
        detail: `The root log has no signed checkpoint of tree size ${size}.`,
      });
    }
    return withCosignatures(stored, await selectCosignatures(db, size));
  };
  const [older, newer] = await Promise.all([load(from), load(to)]);
  const path = from === 0 || from === to ? [] : await proveTree(rootTree(db), to, from);
  return { path, from: older, to: newer };
}
