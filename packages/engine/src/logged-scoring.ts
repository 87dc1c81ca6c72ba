import { cidOfBytes, type LogRecordStamp, scoringRecordV2Bytes } from './log-record.js';
import { SCORECARD_1 } from './model-versions.js';
import { effectivePolicy } from './policy-loader.js';
import type { Policy, ScoreContext, ScoreResult } from './score-types.js';
import { scoreContext } from './scorecard-model.js';

/** A scoring with everything its log needs: the policy used, the result, the record's bytes and CID. */
export interface LoggedScoring {
  policy: Policy;
  result: ScoreResult;
  /** The RFC 8785 canonical bytes of the score-log/2 log record. */
  logBytes: Uint8Array;
  /** The CIDv1 (raw, sha2-256, base32) of `logBytes`. */
  logCid: string;
}

/**
 * Scores a subject under its jurisdiction's effective policy and builds its score-log/2 record under the
 * stamp the server gives it (identity, time, salt: the engine reads no clock and draws no random bytes):
 * the one pipeline the server and the benchmarks share, so they cannot drift apart. (The contract suite
 * does not use it: it predicts scorings from golden cases computed from the scoring-model page, so it
 * catches the engine drifting.)
 */
export function scoreAndLog(subject: string, context: ScoreContext, stamp: LogRecordStamp): LoggedScoring {
  const policy = effectivePolicy(context.jurisdiction);
  const result = scoreContext(context, policy);
  const logBytes = scoringRecordV2Bytes({
    identity: stamp.identity,
    scored_at: stamp.scored_at,
    salt: stamp.salt,
    model_version: SCORECARD_1,
    policy_id: policy.policy_id,
    policy_version: policy.policy_version,
    subject,
    context,
    result,
  });
  return { policy, result, logBytes, logCid: cidOfBytes(logBytes) };
}
