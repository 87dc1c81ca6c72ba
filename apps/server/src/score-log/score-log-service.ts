import { AppError } from '../errors/app-error.js';
import type { ScoreLogStore } from './score-log-store.js';

/**
 * The tenant's log record, as its exact stored bytes (so the client can recompute the CID). Another
 * tenant's record answers 404 like an unknown one, so CIDs reveal nothing.
 */
export async function readLogRecord(
  logs: Pick<ScoreLogStore, 'get'>,
  tenantId: string,
  cid: string,
): Promise<Buffer> {
  const bytes = await logs.get(tenantId, cid);
  if (bytes === undefined) {
    throw new AppError('not_found', { detail: `No log record with CID ${cid} exists for this API key.` });
  }
  return bytes;
}
