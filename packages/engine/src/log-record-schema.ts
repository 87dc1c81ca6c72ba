import type { SCORECARD_1 } from './model-versions.js';
import type { ScoreContext, Scorecard2Result, ScoreResult } from './score-types.js';

/** The schema tag of a scoring's log record. */
export const LOG_SCHEMA = 'score-log/1';

/** The log record of one scoring; its canonical bytes are what the CID names. */
export interface LogRecord {
  schema: typeof LOG_SCHEMA;
  model_version: typeof SCORECARD_1;
  policy_version: string;
  subject: string;
  context: ScoreContext;
  result: ScoreResult;
}

/** The schema tag of a scoring's record since every scoring became its own record, with its time and salt. */
export const LOG_SCHEMA_V2 = 'score-log/2';

/** What a score-log/2 record was scored for: a `POST /v1/scoring/score` request, or one item of a run. */
export type LogRecordIdentity =
  | { kind: 'score'; request_id: string }
  | { kind: 'run_item'; run_id: string; item: number };

/**
 * What the server gives a score-log/2 record besides the scoring: whom it answered (`identity`), when
 * (`scored_at`, `Date#toISOString()`), and a fresh salt (32 CSPRNG bytes, base64url without padding). The
 * engine does not read a clock or draw random bytes itself.
 */
export interface LogRecordStamp {
  identity: LogRecordIdentity;
  scored_at: string;
  salt: string;
}

/**
 * The score-log/2 record of one scoring: the scoring's identity, time and salt beside what score-log/1
 * held, and the policy entry's id. Its canonical bytes are what the CID names and what the leaf hashes.
 */
export type LogRecordV2 = LogRecordIdentity & {
  schema: typeof LOG_SCHEMA_V2;
  scored_at: string;
  salt: string;
  model_version: string;
  policy_id: string;
  policy_version: string;
  subject: string;
  context: ScoreContext;
  /** As answered: a scorecard-2 result holds its reasons (statements in English). */
  result: ScoreResult | Scorecard2Result;
};

/** The input of a score-log/2 record: the scoring, and the stamp the server gives it. */
export interface ScoringRecordInput extends LogRecordStamp {
  model_version: string;
  policy_id: string;
  policy_version: string;
  subject: string;
  context: ScoreContext;
  result: ScoreResult | Scorecard2Result;
}
