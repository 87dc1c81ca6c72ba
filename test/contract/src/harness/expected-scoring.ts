import type { ScoreRequest, ScoreResult } from '@scenario-scoring/client';
import { GOLDEN_POLICY_VERSION, GOLDEN_SCORINGS, type GoldenScoring } from './scoring-golden.js';

/** What the API must answer for a scoring, as the published model predicts: the result, log bytes and CID. */
export interface ExpectedScoring {
  /** The response body without its `id`. */
  response: { status: 'ok'; result: ScoreResult; log_cid: string };
  /** The log record's canonical bytes, which `GET /v1/logs/{cid}` must return exactly. */
  logBytes: Uint8Array;
}

/**
 * The golden scoring of `request` (see scoring-golden.ts, computed from the scoring-model page, never by the
 * engine, so that a change of the server's scoring fails the suite). Throws for a request without a golden
 * case: add it to the script that computes them.
 */
export function expectedScoring(request: ScoreRequest): ExpectedScoring {
  const golden = GOLDEN_SCORINGS.find((g) => canonicalJson(g.request) === canonicalJson(request));
  if (golden === undefined) {
    throw new Error(
      `no golden scoring of ${JSON.stringify(request)}: add it to test/contract/scripts/scorecard-1-golden.py`,
    );
  }
  return {
    response: { status: 'ok', result: golden.result, log_cid: golden.log_cid },
    logBytes: new TextEncoder().encode(canonicalJson(logRecord(golden))),
  };
}

/** The log record of a scoring, as the scoring-model page states it (`score-log/1`). */
function logRecord(golden: GoldenScoring) {
  return {
    schema: 'score-log/1',
    model_version: 'scorecard-1',
    policy_version: GOLDEN_POLICY_VERSION,
    subject: golden.request.subject,
    context: golden.request.context,
    result: golden.result,
  };
}

/**
 * RFC 8785 canonical JSON of plain JSON data: JavaScript's JSON.stringify writes strings and numbers as JCS
 * does, so only the object keys need sorting (by UTF-16 code units, the default sort). No array-index keys
 * occur in these records.
 */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) =>
    item !== null && typeof item === 'object' && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : item,
  );
}

/** A response `id`: `req_` and a ULID. */
export const REQUEST_ID_PATTERN = /^req_[0-9A-HJKMNP-TV-Z]{26}$/;
