import type { Client } from 'openapi-fetch';
import type { LogRecord, paths, ScoreResponse } from './api-types.js';
import { type CallResult, failureOf } from './call-result.js';
import {
  LogProofError,
  type VerifiedCheckpoint,
  verifyCheckpoint,
  verifyInclusion,
} from './log-proof-verifier.js';
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

/** The error of {@link fetchVerifiedLogRecord} when the record is not proved in the signed log. */
export interface LogProofFailure {
  code: 'log_proof_failed';
  /** What did not verify (the checkpoint's signature, or the inclusion, naming the leaf). */
  detail: string;
  cid: string;
}

/** Where the record is in the verifiable log: its leaf in the tree of a checkpoint that verified. */
export interface LogInclusion {
  leafIndex: number;
  checkpoint: VerifiedCheckpoint;
}

/** The result of {@link fetchVerifiedLogRecord}: verified data, or an error as data (never both). */
export type VerifiedLogRecordResult = CallResult<
  { bytes: Uint8Array; record: LogRecord; inclusion?: LogInclusion },
  Problem | LogRecordMismatch | LogProofFailure
>;

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
 * With `verifierKey` (the log's key you pinned) and `origin` (your log's origin line,
 * `<LOG_ORIGIN>/<tenant>`), it also proves that the record is in your signed log: it fetches
 * `GET /v1/log/proofs/inclusion/{cid}`, verifies the checkpoint's signature and origin and the inclusion
 * of these exact bytes, and returns the leaf index and the checkpoint as `data.inclusion`. A record not
 * sequenced yet comes back as the 409 `log_record_not_sequenced` problem (retry after a second).
 *
 * HTTP failures come back as `error` (a problem); so does a mismatch, as a `log_record_mismatch`, and a
 * proof that fails, as a `log_proof_failed`. Throws a TypeError when `cid` is not a CID.
 */
export async function fetchVerifiedLogRecord(
  client: Client<paths>,
  cid: string,
  options: {
    signal?: AbortSignal;
    headers?: Record<string, string>;
  } & ({ verifierKey?: undefined; origin?: undefined } | { verifierKey: string; origin: string }) = {},
): Promise<VerifiedLogRecordResult> {
  const expected = parseCid(cid);
  const { verifierKey, origin, ...init } = options;
  const { data, error, response } = await client.GET('/v1/logs/{cid}', {
    params: { path: { cid } },
    parseAs: 'arrayBuffer',
    ...init,
  });
  if (!response.ok) return failureOf(error, response);
  const bytes = new Uint8Array(data ?? new ArrayBuffer(0));
  const computed = await computeLogCid(bytes);
  if (!expected.equals(parseCid(computed))) {
    const detail = `The log record served for ${cid} hashes to ${computed}.`;
    return { error: { code: 'log_record_mismatch', detail, cid, computed_cid: computed }, response };
  }
  const record = JSON.parse(new TextDecoder().decode(bytes)) as LogRecord;
  if (verifierKey === undefined) return { data: { bytes, record }, response };
  const proof = await client.GET('/v1/log/proofs/inclusion/{cid}', { params: { path: { cid } }, ...init });
  if (proof.data === undefined) return failureOf(proof.error, proof.response);
  try {
    const checkpoint = await verifyCheckpoint(proof.data.checkpoint.note, verifierKey, {
      origin: origin as string,
    });
    await verifyInclusion(bytes, proof.data, checkpoint);
    return { data: { bytes, record, inclusion: { leafIndex: proof.data.leaf_index, checkpoint } }, response };
  } catch (failure) {
    if (!(failure instanceof LogProofError)) throw failure;
    return { error: { code: 'log_proof_failed', detail: failure.message, cid }, response: proof.response };
  }
}

/**
 * Verifies the proof a scoring answered with (`Prefer: log-inclusion`, `scoreSubject(…, { logInclusion:
 * true })`): fetches the record's bytes (`GET /v1/logs/{cid}`) and checks they hash to `log_cid`, verifies
 * `log_inclusion.checkpoint` with the pinned `verifierKey` and your log's `origin`, then the inclusion of
 * those bytes at `log_inclusion.leaf_index`. Resolves with the verified checkpoint; throws a LogProofError
 * saying what did not hold (an answer without `log_inclusion` included), or a problem's code and detail
 * when the record cannot be fetched.
 */
export async function verifyScoreInclusion(
  client: Client<paths>,
  answer: Pick<ScoreResponse, 'log_cid' | 'log_inclusion'>,
  options: { verifierKey: string; origin: string; signal?: AbortSignal },
): Promise<VerifiedCheckpoint> {
  const proof = answer.log_inclusion;
  if (proof === undefined) throw new LogProofError('the answer carries no log_inclusion');
  if (proof.log_cid !== answer.log_cid) {
    throw new LogProofError(`the proof is for ${proof.log_cid}, not for the answer's ${answer.log_cid}`);
  }
  const fetched = await fetchVerifiedLogRecord(client, answer.log_cid, {
    ...(options.signal && { signal: options.signal }),
  });
  if (fetched.data === undefined) {
    const { error, response } = fetched;
    throw new LogProofError(
      `record ${answer.log_cid}: ${error ? `${error.code}: ${error.detail ?? ''}` : `HTTP ${response.status}`}`,
    );
  }
  const checkpoint = await verifyCheckpoint(proof.checkpoint.note, options.verifierKey, {
    origin: options.origin,
  });
  await verifyInclusion(fetched.data.bytes, proof, checkpoint);
  return checkpoint;
}
