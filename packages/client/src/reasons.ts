import type { Client } from 'openapi-fetch';
import type { Notice, paths, Reason, ScoreResult } from './api-types.js';
import { type CallResult, resultOf } from './call-result.js';
import type { CallOptions } from './typed-calls.js';

/**
 * The reasons a scoring's p50 was not higher, in rank order: of an answer (`POST /v1/scoring/score`), a run
 * item's result or a result itself. Empty for a result without reasons (one scored by `scorecard-1`, read
 * from a record logged before `scorecard-2`) or with every factor at its maximum.
 */
export function reasonsOf(scoring: { result: ScoreResult } | ScoreResult): Reason[] {
  const result = 'result' in scoring ? scoring.result : scoring;
  return [...(result.reasons ?? [])].sort((a, b) => a.rank - b.rank);
}

/** What {@link getNotice} asks for: the statements' language (`en` by default) and JSON or the HTML page. */
export interface NoticeOptions extends CallOptions {
  /** Sent as `Accept-Language`; the server answers `en` or `de`, English for anything it lacks. */
  language?: string;
  /** `json` (the default) or `html`, a printable, self-contained page. */
  format?: 'json' | 'html';
}

/**
 * `GET /v1/logs/{cid}/notice`: the key-factor notice of a scoring (score, range, date, model, reasons'
 * statements; illustrative wording, not legal advice) as JSON, or with `format: 'html'` the page's text.
 * Problems: 404 (unknown or another tenant's record), 410 `log_record_erased`, 422 `notice_unavailable`
 * (a record of `scorecard-1`, which has no reasons).
 */
export async function getNotice(
  client: Client<paths>,
  cid: string,
  options?: NoticeOptions & { format?: 'json' },
): Promise<CallResult<Notice>>;
export async function getNotice(
  client: Client<paths>,
  cid: string,
  options: NoticeOptions & { format: 'html' },
): Promise<CallResult<string>>;
export async function getNotice(
  client: Client<paths>,
  cid: string,
  options: NoticeOptions = {},
): Promise<CallResult<Notice | string>> {
  const html = options.format === 'html';
  const { data, error, response } = await client.GET('/v1/logs/{cid}/notice', {
    params: { path: { cid } },
    headers: {
      Accept: html ? 'text/html' : 'application/json',
      ...(options.language !== undefined && { 'Accept-Language': options.language }),
    },
    parseAs: html ? 'text' : 'json',
    ...(options.signal && { signal: options.signal }),
  });
  return resultOf(data as Notice | string | undefined, error, response);
}
