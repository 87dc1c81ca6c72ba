import type { SCORECARD_1 } from './model-versions.js';
import type { ScoreContext, ScoreResult } from './score-types.js';

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
