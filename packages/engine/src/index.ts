export {
  assertValidContext,
  type ContextIssue,
  contextIssues,
  InvalidContextError,
  JURISDICTION_PATTERN,
} from './context-validator.js';
export { escalationReasons } from './escalation-rules.js';
export { EXPLAIN_SIZE, type ExplainMarker, explainMarker } from './explain-marker.js';
export {
  type ContextKey,
  FACTOR_NAMES,
  FACTORS,
  type FactorName,
  type FactorSpec,
  isFactorName,
  type LeverDirection,
  MODEL_VERSION,
} from './factor-table.js';
export { MAX_LEVERS } from './lever-finder.js';
export {
  buildLogRecord,
  buildLogRecordV2,
  canonicalBytes,
  cidOfBytes,
  LOG_SCHEMA,
  LOG_SCHEMA_V2,
  type LogRecord,
  type LogRecordIdentity,
  type LogRecordStamp,
  type LogRecordV2,
  logRecordBytes,
  type ScoringRecordInput,
  scoringRecordBytes,
} from './log-record.js';
export { type LoggedScoring, scoreAndLog } from './logged-scoring.js';
export {
  effectivePolicy,
  loadPolicies,
  POLICIES,
  PolicyFileError,
  type PolicySet,
  parsePolicyFile,
  type ResolvedPolicyEntry,
  WEIGHT_TOTAL,
} from './policy-loader.js';
export {
  type FactorBreakdown,
  SCENARIO_NAMES,
  SCENARIO_Z,
  type ScoreBreakdown,
  scoreBreakdown,
  toScore,
  Z_P90,
} from './score-breakdown.js';
export type {
  EscalationReason,
  Lever,
  Policy,
  Scenario,
  ScenarioName,
  ScoreContext,
  ScoreResult,
} from './score-types.js';
export { scoreContext } from './scorecard-model.js';
