import { formatTlogProof } from '@scenario-scoring/tlog';
import type { Kysely } from 'kysely';
import { AppError } from '../errors/app-error.js';
import type { Database } from '../storage/database.js';
import { proveRootInclusion, type RootLogView } from './root-log-service.js';
import { proveInclusion } from './verifiable-log-service.js';

/** How long a client should wait before asking again for a record whose checkpoint is not rooted yet. */
const RETRY_AFTER_SECONDS = 1;

/**
 * The offline proof file of the tenant's record `cid` whose exact bytes are `record`: a C2SP tlog-proof
 * of the tenant's checkpoint in the served root checkpoint (cosignatures included) whose `extra` is the
 * inner tlog-proof of the record in that tenant checkpoint, whose own `extra` is the record's bytes. The
 * tenant checkpoint is the tenant's latest one in the root log; 409 `log_record_not_sequenced` (Retry-After)
 * while the record is not in it yet; 404 for an unknown CID.
 */
export async function proofFile(
  db: Kysely<Database>,
  view: RootLogView,
  tenantId: string,
  cid: string,
  record: Uint8Array,
): Promise<string> {
  const root = await proveRootInclusion(db, view, tenantId);
  let inclusion: Awaited<ReturnType<typeof proveInclusion>>;
  try {
    inclusion = await proveInclusion(db, tenantId, cid, root.tenantCheckpoint.treeSize);
  } catch (error) {
    if (!(error instanceof AppError) || error.code !== 'tree_size_too_small') throw error;
    throw new AppError('log_record_not_sequenced', {
      detail: `The record ${cid} is not in a checkpoint of the served root checkpoint yet; ask again after Retry-After seconds.`,
      headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
    });
  }
  const inner = formatTlogProof({
    extra: record,
    index: inclusion.leafIndex,
    path: inclusion.path,
    checkpoint: root.tenantCheckpoint.note,
  });
  return formatTlogProof({
    extra: new TextEncoder().encode(inner),
    index: root.leafIndex,
    path: root.path,
    checkpoint: root.rootCheckpoint.note,
  });
}
