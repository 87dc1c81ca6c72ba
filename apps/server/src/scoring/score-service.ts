import type { ScoreRequest, ScoreResponse } from '@scenario-scoring/api-types';
import { scoreAndLog } from '@scenario-scoring/engine';
import { escalationEvent } from '../policies/policy-escalation.js';
import { recordStamp } from '../score-log/record-stamp.js';
import type { ScoreLogStore } from '../score-log/score-log-store.js';
import { traced } from '../tracing/tracing.js';
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
 * The record is score-log/2: this request's id, `caller.now` and a fresh salt make it a record of its own,
 * so a scoring repeated is logged again (a leaf each, with its time).
 * When the policy escalates the result, its `policy.escalated` event commits in the record's transaction.
 */
export async function scoreSubject(
  logs: Pick<ScoreLogStore, 'append'>,
  caller: ScoringCaller,
  request: ScoreRequest,
): Promise<ScoreResponse> {
  const stamp = recordStamp({ kind: 'score', request_id: caller.requestId }, caller.now);
  const scoring = traced('engine.score', () => scoreAndLog(request.subject, request.context, stamp));
  const event = escalationEvent(
    caller.tenantId,
    request.subject,
    scoring,
    { requestId: caller.requestId },
    caller.now,
  );
  await traced('score_log.append', () =>
    logs.append({
      tenantId: caller.tenantId,
      cid: scoring.logCid,
      bytes: scoring.logBytes,
      requestId: caller.requestId,
      createdAt: caller.now,
      subject: request.subject,
      ...(event && { events: [event] }),
    }),
  );
  return {
    id: caller.requestId,
    status: 'ok',
    result: contractScoreResult(scoring.result),
    log_cid: scoring.logCid,
  };
}
