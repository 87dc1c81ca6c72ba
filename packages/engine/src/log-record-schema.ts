import type { MODEL_VERSION } from './factor-table.js';
import type { ScoreContext, ScoreResult } from './score-types.js';

/** The schema tag of a scoring's log record. */
export const LOG_SCHEMA = 'score-log/1';

/** The log record of one scoring; its canonical bytes are what the CID names. */
export interface LogRecord {
  schema: typeof LOG_SCHEMA;
  model_version: typeof MODEL_VERSION;
  policy_version: string;
  subject: string;
  context: ScoreContext;
  result: ScoreResult;
}
