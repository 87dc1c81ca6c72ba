import { cidOfBytes, type LogRecordStamp, scoringRecordV2Bytes } from './log-record.js';
import { MODEL_VERSION } from './model-versions.js';
import { effectivePolicy } from './policy-loader.js';
import type { Policy, ScoreContext, Scorecard2Result } from './score-types.js';
import { scoreScorecard2 } from './scorecard-model.js';

/** A scoring with everything its log needs: the policy used, the result, the record's bytes and CID. */
export interface LoggedScoring {
  policy: Policy;
  /** The model that scored it (the current one, `MODEL_VERSION`), as the record names it. */
  modelVersion: typeof MODEL_VERSION;
  /** The result with its reasons, their statements in English (the record's language, whatever was asked). */
  result: Scorecard2Result;
  /** The RFC 8785 canonical bytes of the score-log/2 log record. */
  logBytes: Uint8Array;
  /** The CIDv1 (raw, sha2-256, base32) of `logBytes`. */
  logCid: string;
}

/**
 * Scores a subject with the current model (scorecard-2) under its jurisdiction's effective policy (or the
 * one given, e.g. `default` chosen by the server) and builds its score-log/2 record under the
 * stamp the server gives it (identity, time, salt: the engine reads no clock and draws no random bytes):
 * the one pipeline the server and the benchmarks share, so they cannot drift apart. (The contract suite
 * does not use it: it predicts scorings from golden cases computed from the scoring-model page, so it
 * catches the engine drifting.)
 */
export function scoreAndLog(
  subject: string,
  context: ScoreContext,
  stamp: LogRecordStamp,
  policy: Policy = effectivePolicy(context.jurisdiction),
): LoggedScoring {
  // The record holds the statements in English, so it can be recomputed from the model page alone; an
  // answer in another language restates them (`restateReasons`), the codes and numbers unchanged.
  const result = scoreScorecard2(context, policy);
  const logBytes = scoringRecordV2Bytes({
    identity: stamp.identity,
    scored_at: stamp.scored_at,
    salt: stamp.salt,
    model_version: MODEL_VERSION,
    policy_id: policy.policy_id,
    policy_version: policy.policy_version,
    subject,
    context,
    result,
  });
  return { policy, modelVersion: MODEL_VERSION, result, logBytes, logCid: cidOfBytes(logBytes) };
}
