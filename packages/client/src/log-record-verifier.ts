import { CID } from 'multiformats/cid';
import * as raw from 'multiformats/codecs/raw';
import { sha256 } from 'multiformats/hashes/sha2';

/** The bytes of a log record, as `GET /v1/logs/{cid}` returns them, or as text (UTF-8). */
export type LogRecordBytes = Uint8Array | ArrayBuffer | string;

function toBytes(bytes: LogRecordBytes): Uint8Array {
  if (typeof bytes === 'string') return new TextEncoder().encode(bytes);
  return bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
}

/** Parses a CID string, throwing a TypeError that names the value when it is not one. */
export function parseCid(cid: string): CID {
  try {
    return CID.parse(cid);
  } catch (cause) {
    throw new TypeError(`Not a CID: ${JSON.stringify(cid)}`, { cause });
  }
}

/**
 * The CID of log record bytes, as the server computes `log_cid`: CIDv1, codec raw (0x55), sha2-256,
 * written in base32 (`bafkrei…`). Uses WebCrypto in browsers and node:crypto in Node.
 */
export async function computeLogCid(bytes: LogRecordBytes): Promise<string> {
  const digest = await sha256.digest(toBytes(bytes));
  return CID.createV1(raw.code, digest).toString();
}

/**
 * Tells whether `bytes` are the log record that `cid` names, by recomputing the CID. `cid` may be in any
 * multibase the CID parser reads (base32 as the API writes it, base58btc, base36). Returns false for a CID
 * of other bytes, another codec or another hash; throws a TypeError when `cid` is not a CID at all.
 */
export async function verifyLogRecord(bytes: LogRecordBytes, cid: string): Promise<boolean> {
  const expected = parseCid(cid);
  return expected.equals(CID.parse(await computeLogCid(bytes)));
}
