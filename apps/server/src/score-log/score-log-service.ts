import { AppError } from '../errors/app-error.js';
import type { ScoreLogStore } from './score-log-store.js';

/**
 * The tenant's log record, as its exact stored bytes (so the client can recompute the CID). Another
 * tenant's record answers 404 like an unknown one, so CIDs reveal nothing; an erased one 410
 * `log_record_erased`, naming the erasure.
 */
export async function readLogRecord(
  logs: Pick<ScoreLogStore, 'get' | 'erasedBy'>,
  tenantId: string,
  cid: string,
): Promise<Buffer> {
  const bytes = await logs.get(tenantId, cid);
  if (bytes === undefined) {
    throw new AppError('not_found', { detail: `No log record with CID ${cid} exists for this API key.` });
  }
  // No record is empty (canonical JSON of an object): empty bytes are an erased record's.
  if (bytes.byteLength === 0) {
    const erasure = await logs.erasedBy(tenantId, cid);
    throw new AppError('log_record_erased', {
      detail: `The record ${cid} was erased by ${erasure ?? 'an erasure'}; its leaf stays in the log.`,
    });
  }
  return bytes;
}
