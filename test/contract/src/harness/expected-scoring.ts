import { type ScoreRequest, type ScoreResult, verifyLogRecord } from '@scenario-scoring/client';
import { expect } from 'vitest';
import { expectedPolicyId } from './expected-policies.js';
import { GOLDEN_POLICY_VERSION, GOLDEN_SCORINGS, type GoldenScoring } from './scoring-golden.js';

/** The model the server scores with, which the golden scorings implement from the scoring-model page. */
export const GOLDEN_MODEL_VERSION = 'scorecard-2';

/** What the API must answer for a scoring, as the published model predicts: the result, and its record. */
export interface ExpectedScoring {
  /**
   * The response body without its `id` and `log_cid`: the CID names a score-log/2 record, salted with
   * random bytes, so it is no literal; `expectServedRecord` checks the record it names.
   */
  response: {
    status: 'ok';
    result: ScoreResult;
    model_version: string;
    policy_id: string;
    policy_version: string;
  };
  golden: GoldenScoring;
}

/** Whom a score-log/2 record answered: a scoring request, or an item of a run. */
export type RecordIdentity =
  | { kind: 'score'; request_id: string }
  | { kind: 'run_item'; run_id: string; item: number };

/** `Date#toISOString()`: RFC 3339 in UTC with milliseconds. */
const SCORED_AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
/** 32 bytes, base64url without padding. */
const SALT = /^[A-Za-z0-9_-]{43}$/;

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
    response: {
      status: 'ok',
      result: golden.result,
      model_version: GOLDEN_MODEL_VERSION,
      policy_id: expectedPolicyId(request.context.jurisdiction),
      policy_version: GOLDEN_POLICY_VERSION,
    },
    golden,
  };
}

/**
 * Expects `bytes`, served for `cid`, to be the score-log/2 record the scoring-model page predicts for
 * `request` answered as `identity`: bytes whose CID is `cid`, in RFC 8785 canonical form, holding the
 * literal golden result (its reasons' statements in English, whatever the answer's language), subject,
 * context, model and policy, a salt of 32 bytes, and a `scored_at` within
 * `window` (the time the request was sent and answered) when one is given.
 */
export async function expectServedRecord(
  bytes: Uint8Array,
  cid: string,
  request: ScoreRequest,
  identity: RecordIdentity,
  window?: { from: string; to: string },
): Promise<void> {
  const text = new TextDecoder().decode(bytes);
  expect(await verifyLogRecord(bytes, cid), text).toBe(true);
  const record = JSON.parse(text) as { scored_at: string };
  expect(text).toBe(canonicalJson(record));
  expect(record).toEqual({
    schema: 'score-log/2',
    ...identity,
    scored_at: expect.stringMatching(SCORED_AT),
    salt: expect.stringMatching(SALT),
    model_version: GOLDEN_MODEL_VERSION,
    policy_id: expectedPolicyId(request.context.jurisdiction),
    policy_version: GOLDEN_POLICY_VERSION,
    subject: request.subject,
    context: request.context,
    result: expectedScoring(request).response.result,
  });
  if (window !== undefined) {
    expect(record.scored_at >= window.from && record.scored_at <= window.to, record.scored_at).toBe(true);
  }
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

/** A log CID: CIDv1, raw codec, sha2-256, base32 (`bafkrei…`). */
export const LOG_CID_PATTERN = /^bafkrei[a-z2-7]{52}$/;
