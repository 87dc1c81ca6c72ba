// The engine's public surface: what the server, the client, the contract suite and the benchmarks use.
// Everything else is internal; the engine's own tests import it by path.
export { escalationReasons } from './escalation-rules.js';
export {
  buildLogRecord,
  buildLogRecordV2,
  canonicalBytes,
  cidOfBytes,
  type LogRecordIdentity,
  type LogRecordStamp,
  type LogRecordV2,
  logRecordBytes,
} from './log-record.js';
export { answerResultUtf8, jsonUtf8, utf8AsLatin1 } from './log-record-json.js';
export { type LoggedScoring, scoreAndLog } from './logged-scoring.js';
export {
  catalogModel,
  DEFAULT_REASON_LANGUAGE,
  isReasonLanguage,
  MODEL_CATALOG,
  type ReasonCode,
  type ReasonLanguage,
  reasonStatement,
} from './model-catalog.js';
export { isModelVersion, MODEL_VERSION } from './model-versions.js';
export { effectivePolicy, POLICIES } from './policy-loader.js';
export { restateReasons } from './reason-finder.js';
export type { Policy, Reason, ScoreContext, Scorecard2Result, ScoreResult } from './score-types.js';
export { scoreContext, scoreScorecard2 } from './scorecard-model.js';
