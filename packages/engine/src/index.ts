export {
  assertValidContext,
  type ContextIssue,
  contextIssues,
  InvalidContextError,
  JURISDICTION_PATTERN,
} from './context-validator.js';
export { escalationReasons } from './escalation-rules.js';
export { EXPLAIN_SIZE, type ExplainMarker, explainMarker, roundedAttribution } from './explain-marker.js';
export {
  type ContextKey,
  FACTOR_NAMES,
  FACTORS,
  type FactorName,
  type FactorSpec,
  isFactorName,
  type LeverDirection,
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
  type CatalogFactor,
  type CatalogModel,
  type CatalogReasonCode,
  type CatalogReasonMethod,
  catalogModel,
  DEFAULT_REASON_LANGUAGE,
  isReasonLanguage,
  MODEL_CATALOG,
  type ModelCatalog,
  ModelCatalogError,
  parseModelCatalog,
  REASON_LANGUAGES,
  type ReasonCode,
  type ReasonLanguage,
  reasonStatement,
} from './model-catalog.js';
export {
  isModelVersion,
  MODEL_VERSION,
  MODEL_VERSIONS,
  type ModelVersion,
  SCORECARD_1,
  SCORECARD_2,
} from './model-versions.js';
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
  findReasons,
  MAX_REASONS,
  type PointsBelowMax,
  pointsBelowMax,
  restateReasons,
} from './reason-finder.js';
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
  Reason,
  Scenario,
  ScenarioName,
  ScoreContext,
  Scorecard2Result,
  ScoreResult,
} from './score-types.js';
export { type ScoreOptions, scoreContext, scoreScorecard2, scoreWith } from './scorecard-model.js';
