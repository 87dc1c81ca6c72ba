import type { ScoreRequest, ScoreResponse } from '@scenario-scoring/api-types';
import { type ReasonLanguage, restateReasons, scoreAndLog } from '@scenario-scoring/engine';
import { escalationEvent } from '../policies/policy-escalation.js';
import { scoringPolicy, type UnknownJurisdictionMode } from '../policies/scoring-policy.js';
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
  /** The language of the answer's reason statements (the record holds them in English). */
  language: ReasonLanguage;
  /** What to do with a jurisdiction without a policy entry of its own. */
  unknownJurisdiction: UnknownJurisdictionMode;
}

/**
 * Scores a valid request with the current model under its jurisdiction's policy (or `default`, or 422
 * `unknown_jurisdiction` when the deployment refuses codes without an entry) and logs it durably before
 * answering. The answer names the model and the policy; its reasons' statements are in `caller.language`,
 * the record's in English (the record is the result as the model page gives it, whatever the language): the log
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
  const policy = scoringPolicy(request.context.jurisdiction, caller.unknownJurisdiction);
  const stamp = recordStamp({ kind: 'score', request_id: caller.requestId }, caller.now);
  const scoring = traced('engine.score', () => scoreAndLog(request.subject, request.context, stamp, policy));
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
  const { result } = scoring;
  const answered =
    caller.language === 'en'
      ? result
      : { ...result, reasons: restateReasons(result.reasons, caller.language) };
  return {
    id: caller.requestId,
    status: 'ok',
    result: contractScoreResult(answered),
    model_version: scoring.modelVersion,
    policy_id: policy.policy_id,
    policy_version: policy.policy_version,
    log_cid: scoring.logCid,
  };
}
