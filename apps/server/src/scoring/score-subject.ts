import type { ScoreRequest, ScoreResponse } from '@scenario-scoring/api-types';
import { scoreAndLog } from '@scenario-scoring/engine';
import type { Storage } from '../storage/storage.js';

/** Who asks for a scoring, and the ids and clock it is recorded under. */
export interface ScoringCaller {
  tenantId: string;
  /** The `req_` id of the response, also kept with the log record. */
  requestId: string;
  now: Date;
}

/**
 * Scores a valid request under its jurisdiction's policy and logs it durably before answering: the log
 * record's canonical bytes are appended, and `log_cid` is their CID, so no result exists without its record.
 */
export async function scoreSubject(
  storage: Pick<Storage, 'appendLogRecord'>,
  caller: ScoringCaller,
  request: ScoreRequest,
): Promise<ScoreResponse> {
  const { result, logBytes: bytes, logCid: cid } = scoreAndLog(request.subject, request.context);
  await storage.appendLogRecord({
    tenantId: caller.tenantId,
    cid,
    bytes,
    requestId: caller.requestId,
    createdAt: caller.now,
  });
  // The engine types a lever's name as any factor; only actionable ones (the contract's enum) become levers.
  return { id: caller.requestId, status: 'ok', result: result as ScoreResponse['result'], log_cid: cid };
}
