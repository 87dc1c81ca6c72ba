import type { ScoreRequest, ScoreResponse } from '@scenario-scoring/api-types';
import { scoreAndLog } from '@scenario-scoring/engine';
import { escalationEvent } from '../policies/policy-escalation.js';
import type { ScoreLogStore } from '../score-log/score-log-store.js';
import { contractScoreResult } from './score-result.js';

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
 * When the policy escalates the result, its `policy.escalated` event commits in the record's transaction.
 */
export async function scoreSubject(
  logs: Pick<ScoreLogStore, 'append'>,
  caller: ScoringCaller,
  request: ScoreRequest,
): Promise<ScoreResponse> {
  const scoring = scoreAndLog(request.subject, request.context);
  const event = escalationEvent(
    caller.tenantId,
    request.subject,
    scoring,
    { requestId: caller.requestId },
    caller.now,
  );
  await logs.append({
    tenantId: caller.tenantId,
    cid: scoring.logCid,
    bytes: scoring.logBytes,
    requestId: caller.requestId,
    createdAt: caller.now,
    subject: request.subject,
    ...(event && { events: [event] }),
  });
  return {
    id: caller.requestId,
    status: 'ok',
    result: contractScoreResult(scoring.result),
    log_cid: scoring.logCid,
  };
}
