import type { ScoreRequest, ScoreResponse } from '@scenario-scoring/api-types';
import {
  answerResultUtf8,
  jsonUtf8,
  type ReasonLanguage,
  restateReasons,
  scoreAndLog,
  utf8AsLatin1,
} from '@scenario-scoring/engine';
import { escalationEvent } from '../policies/policy-escalation.js';
import { scoringPolicy, type UnknownJurisdictionMode } from '../policies/scoring-policy.js';
import { recordStamp } from '../score-log/record-stamp.js';
import type { ScoreLogStore } from '../score-log/score-log-store.js';
import { traced } from '../tracing/tracing.js';
import { contractScoreResult, isContractResult } from './score-result.js';

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

/** A scoring's answer, and its result's text when the answer may be written from it. */
export interface ScoredSubject {
  response: ScoreResponse;
  /**
   * The answer's `result` as `JSON.stringify` writes it, UTF-8 bytes one per character, when every lever is a
   * contract lever (the contract's result is then the engine's, member for member): written by the engine's
   * serializer (`answerResultUtf8`), not by walking the object. `scoreAnswerUtf8` writes the answer around it.
   */
  resultUtf8?: string;
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
): Promise<ScoredSubject> {
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
  const english = caller.language === 'en';
  const answered = english ? result : { ...result, reasons: restateReasons(result.reasons, caller.language) };
  const contract = isContractResult(answered);
  const response: ScoreResponse = {
    id: caller.requestId,
    status: 'ok',
    result: contract ? answered : contractScoreResult(answered),
    model_version: scoring.modelVersion,
    policy_id: policy.policy_id,
    policy_version: policy.policy_version,
    log_cid: scoring.logCid,
  };
  return contract ? { response, resultUtf8: answerResultUtf8(answered) } : { response };
}

/**
 * `JSON.stringify(response)` of a scoring's answer, as UTF-8 bytes one per character, written around its
 * result's text (`ScoredSubject.resultUtf8`): the same members in the same order, `log_inclusion` last when
 * the answer has one.
 */
export function scoreAnswerUtf8(response: ScoreResponse, resultUtf8: string): string {
  const inclusion =
    response.log_inclusion === undefined
      ? ''
      : `,"log_inclusion":${utf8AsLatin1(JSON.stringify(response.log_inclusion))}`;
  return `{"id":${jsonUtf8(response.id)},"status":${jsonUtf8(response.status)},"result":${resultUtf8},"model_version":${jsonUtf8(response.model_version)},"policy_id":${jsonUtf8(response.policy_id)},"policy_version":${jsonUtf8(response.policy_version)},"log_cid":${jsonUtf8(response.log_cid)}${inclusion}}`;
}
