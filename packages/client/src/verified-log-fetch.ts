import type { Client } from 'openapi-fetch';
import type { LogRecord, paths } from './api-types.js';
import { computeLogCid, parseCid } from './log-record-verifier.js';
import type { Problem } from './problem-guard.js';

/** The error of {@link fetchVerifiedLogRecord} when the bytes served are not the ones the CID names. */
export interface LogRecordMismatch {
  code: 'log_record_mismatch';
  detail: string;
  /** The CID that was asked for. */
  cid: string;
  /** The CID of the bytes that came back. */
  computed_cid: string;
}

/** The result of {@link fetchVerifiedLogRecord}: verified data, or an error as data (never both). */
export type VerifiedLogRecordResult =
  | { data: { bytes: Uint8Array; record: LogRecord }; error?: never; response: Response }
  | { data?: never; error: Problem | LogRecordMismatch | undefined; response: Response };

/**
 * Fetches `GET /v1/logs/{cid}` as raw bytes and checks that they hash to `cid`, which proves the record
 * is the one the scoring logged. It is the same as doing it by hand:
 *
 * ```ts
 * const { data, error } = await client.GET('/v1/logs/{cid}', {
 *   params: { path: { cid } },
 *   parseAs: 'arrayBuffer', // the exact bytes, not re-serialized JSON
 * });
 * if (data) console.log(await verifyLogRecord(data, cid));
 * ```
 *
 * HTTP failures come back as `error` (a problem); so does a mismatch, as a `log_record_mismatch`.
 * Throws a TypeError when `cid` is not a CID.
 */
export async function fetchVerifiedLogRecord(
  client: Client<paths>,
  cid: string,
  init: { signal?: AbortSignal; headers?: Record<string, string> } = {},
): Promise<VerifiedLogRecordResult> {
  const expected = parseCid(cid);
  const { data, error, response } = await client.GET('/v1/logs/{cid}', {
    params: { path: { cid } },
    parseAs: 'arrayBuffer',
    ...init,
  });
  if (!response.ok) return { error, response };
  const bytes = new Uint8Array(data ?? new ArrayBuffer(0));
  const computed = await computeLogCid(bytes);
  if (!expected.equals(parseCid(computed))) {
    const detail = `The log record served for ${cid} hashes to ${computed}.`;
    return { error: { code: 'log_record_mismatch', detail, cid, computed_cid: computed }, response };
  }
  const record = JSON.parse(new TextDecoder().decode(bytes)) as LogRecord;
  return { data: { bytes, record }, response };
}
