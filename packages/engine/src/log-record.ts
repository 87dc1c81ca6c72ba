import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { CID } from 'multiformats/cid';
import * as Digest from 'multiformats/hashes/digest';
import { MODEL_VERSION } from './factor-table.js';
import type { ScoreContext, ScoreResult } from './score-types.js';

/** The schema tag of a scoring's log record. */
export const LOG_SCHEMA = 'score-log/1';
/** The multicodec of raw bytes: the CID names the record's exact bytes, not a decoded structure. */
export const RAW_CODEC = 0x55;
/** The multihash code of sha2-256. */
export const SHA2_256_CODE = 0x12;

/** The log record of one scoring; its canonical bytes are what the CID names. */
export interface LogRecord {
  schema: typeof LOG_SCHEMA;
  model_version: typeof MODEL_VERSION;
  policy_version: string;
  subject: string;
  context: ScoreContext;
  result: ScoreResult;
}

/**
 * Builds the log record of a scoring. The request id and time are deliberately absent so the CID is a pure
 * function of input and output that anyone can recompute.
 */
export function buildLogRecord(input: {
  policy_version: string;
  subject: string;
  context: ScoreContext;
  result: ScoreResult;
}): LogRecord {
  return {
    schema: LOG_SCHEMA,
    model_version: MODEL_VERSION,
    policy_version: input.policy_version,
    subject: input.subject,
    context: input.context,
    result: input.result,
  };
}

const utf8 = new TextEncoder();

/** The RFC 8785 (JCS) canonical JSON of a value, as UTF-8 bytes. Throws for values JSON cannot represent. */
export function canonicalBytes(value: unknown): Uint8Array {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError('value has no JSON representation');
  return utf8.encode(text);
}

/**
 * The CIDv1 (raw codec, sha2-256, base32 `bafkrei…`) of some bytes: what IPFS tooling gives the same bytes.
 * Synchronous, using node:crypto, because it sits on every scoring's hot path.
 */
export function cidOfBytes(bytes: Uint8Array): string {
  const hash = createHash('sha256').update(bytes).digest();
  return CID.createV1(RAW_CODEC, Digest.create(SHA2_256_CODE, hash)).toString();
}
