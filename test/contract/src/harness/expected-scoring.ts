import type { ScoreRequest } from '@scenario-scoring/client';
import { type ScoreResult, scoreAndLog } from '@scenario-scoring/engine';

/** What the API must answer for a scoring, computed by the engine: the result, log record bytes and CID. */
export interface ExpectedScoring {
  /** The response body without its `id`. */
  response: { status: 'ok'; result: ScoreResult; log_cid: string };
  /** The log record's canonical bytes, which `GET /v1/logs/{cid}` must return exactly. */
  logBytes: Uint8Array;
}

/** The engine's scoring of `request` under its jurisdiction's effective policy. */
export function expectedScoring(request: ScoreRequest): ExpectedScoring {
  const { result, logBytes, logCid } = scoreAndLog(request.subject, request.context);
  return { response: { status: 'ok', result, log_cid: logCid }, logBytes };
}

/** A response `id`: `req_` and a ULID. */
export const REQUEST_ID_PATTERN = /^req_[0-9A-HJKMNP-TV-Z]{26}$/;
