import canonicalize from 'canonicalize';
import { logRecordJson, scoringRecordUtf8, scoringRecordV2Utf8 } from './log-record-json.js';
import {
  LOG_SCHEMA,
  LOG_SCHEMA_V2,
  type LogRecord,
  type LogRecordV2,
  type ScoringRecordInput,
} from './log-record-schema.js';
import { SCORECARD_1 } from './model-versions.js';
import type { ScoreContext, ScoreResult } from './score-types.js';

export { cidOfBytes, RAW_CODEC, SHA2_256_CODE } from './content-id.js';
export {
  LOG_SCHEMA,
  LOG_SCHEMA_V2,
  type LogRecord,
  type LogRecordIdentity,
  type LogRecordStamp,
  type LogRecordV2,
  type ScoringRecordInput,
} from './log-record-schema.js';

/**
 * Builds the score-log/1 record of a scoring: a pure function of input and output, without identity, time
 * or salt. Scorings are no longer logged in this form; it is kept to read and recompute the records that were.
 */
export function buildLogRecord(input: {
  policy_version: string;
  subject: string;
  context: ScoreContext;
  result: ScoreResult;
}): LogRecord {
  return {
    schema: LOG_SCHEMA,
    model_version: SCORECARD_1,
    policy_version: input.policy_version,
    subject: input.subject,
    context: input.context,
    result: input.result,
  };
}

/**
 * Builds the score-log/2 record of a scoring: every scoring its own record, with whom it answered, when, and
 * a salt that makes its CID and leaf hash hiding commitments (no one without the bytes can test a guess).
 */
export function buildLogRecordV2(input: ScoringRecordInput): LogRecordV2 {
  const { identity } = input;
  const common = {
    schema: LOG_SCHEMA_V2,
    scored_at: input.scored_at,
    salt: input.salt,
    model_version: input.model_version,
    policy_id: input.policy_id,
    policy_version: input.policy_version,
    subject: input.subject,
    context: input.context,
    result: input.result,
  } as const;
  return identity.kind === 'score'
    ? { kind: 'score', request_id: identity.request_id, ...common }
    : { kind: 'run_item', run_id: identity.run_id, item: identity.item, ...common };
}

const utf8 = new TextEncoder();

/** Marks a value the fast path cannot serialise exactly; the `canonicalize` library then does. */
const NOT_PLAIN = Symbol('not plain JSON');
const ARRAY_INDEX_KEY = /^\d+$/;
/** `String.prototype.isWellFormed` (ES2024, Node 20+), which the compiler's ES2022 library does not declare. */
type WellFormedCheck = string & { isWellFormed(): boolean };

/**
 * `value` rebuilt with every object's keys inserted in UTF-16 code unit order, so that the native
 * `JSON.stringify` writes RFC 8785 canonical JSON: JCS serialises strings and numbers exactly as
 * ECMAScript's JSON.stringify does, and differs only in key order. Gives NOT_PLAIN where that does not
 * hold: a key that is an array index (JavaScript enumerates those first), a non-finite number, a string
 * with a lone surrogate, `undefined`,
 * or anything but plain objects, arrays, strings, finite numbers, booleans and null.
 */
function sortedForJson(value: unknown): unknown {
  if (value === null || typeof value === 'boolean') return value;
  // A lone surrogate is not Unicode text; RFC 8785 refuses it, and so does the library.
  if (typeof value === 'string') return (value as WellFormedCheck).isWellFormed() ? value : NOT_PLAIN;
  if (typeof value === 'number') return Number.isFinite(value) ? value : NOT_PLAIN;
  if (Array.isArray(value)) {
    const items: unknown[] = [];
    for (const item of value) {
      const sorted = sortedForJson(item);
      if (sorted === NOT_PLAIN) return NOT_PLAIN;
      items.push(sorted);
    }
    return items;
  }
  if (typeof value !== 'object') return NOT_PLAIN;
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return NOT_PLAIN;
  const record = value as Record<string, unknown>;
  const sorted: Record<string, unknown> = {};
  // Default sort order compares UTF-16 code units, which is what RFC 8785 §3.2.3 asks for.
  for (const key of Object.keys(record).sort()) {
    // `sorted.__proto__ = …` would set the prototype instead of a key: leave that key to the library.
    if (ARRAY_INDEX_KEY.test(key) || key === '__proto__') return NOT_PLAIN;
    const item = sortedForJson(record[key]);
    if (item === NOT_PLAIN) return NOT_PLAIN;
    sorted[key] = item;
  }
  return sorted;
}

/**
 * The RFC 8785 (JCS) canonical JSON of a value, as UTF-8 bytes. Throws for values JSON cannot represent.
 * Plain JSON data (every log record) takes a fast path through the native JSON.stringify, several times
 * faster than the generic library on the scoring hot path; anything else goes through `canonicalize`.
 */
export function canonicalBytes(value: unknown): Uint8Array {
  const plain = sortedForJson(value);
  const text = plain === NOT_PLAIN ? canonicalize(value) : JSON.stringify(plain);
  if (text === undefined) throw new TypeError('value has no JSON representation');
  return utf8.encode(text);
}

/**
 * The RFC 8785 canonical bytes of a log record: the serializer specialised for the record's fixed shape,
 * or the generic `canonicalBytes` for anything that is not exactly that shape. Same bytes either way.
 */
export function logRecordBytes(record: LogRecord | LogRecordV2): Uint8Array {
  const text = logRecordJson(record);
  return text === undefined ? canonicalBytes(record) : utf8Bytes(text);
}

/**
 * `logRecordBytes` of the record of a scoring the engine just made (see `scoringRecordUtf8`): the same
 * bytes without re-checking the shape the engine guarantees.
 */
export function scoringRecordBytes(input: {
  policy_version: string;
  subject: string;
  context: ScoreContext;
  result: ScoreResult;
}): Uint8Array {
  const bytes = scoringRecordUtf8(
    LOG_SCHEMA,
    input.policy_version,
    input.subject,
    input.context,
    input.result,
  );
  return bytes === undefined ? canonicalBytes(buildLogRecord(input)) : latin1Bytes(bytes);
}

/**
 * The score-log/2 bytes of a scoring the engine just made (see `scoringRecordV2Utf8`): `logRecordBytes` of
 * `buildLogRecordV2(input)` without building the record or re-checking the shape the engine guarantees.
 */
export function scoringRecordV2Bytes(input: ScoringRecordInput): Uint8Array {
  const bytes = scoringRecordV2Utf8(input);
  return bytes === undefined ? canonicalBytes(buildLogRecordV2(input)) : latin1Bytes(bytes);
}

/**
 * UTF-8 bytes as a plain Uint8Array over an ArrayBuffer of their own (a scoring thread moves that buffer to
 * the main thread): encoded into Buffer's shared pool, then copied out, which measured faster than the
 * TextEncoder or a Buffer of its own (`allocUnsafeSlow`) for records of this size.
 */
function utf8Bytes(text: string): Uint8Array {
  return new Uint8Array(Buffer.from(text, 'utf8'));
}

/** A scratch buffer the one-byte strings are written into before their bytes are copied out. */
const SCRATCH = Buffer.allocUnsafeSlow(1 << 16);
const SCRATCH_BYTES = new Uint8Array(SCRATCH.buffer, SCRATCH.byteOffset, SCRATCH.length);

/**
 * The bytes a one-byte string holds (see `scoringRecordUtf8`), as a plain Uint8Array over an ArrayBuffer of
 * its own, never the scratch buffer: written into the scratch buffer, then copied out by `slice`, which
 * measured cheaper than a Buffer of its own or one from the shared pool copied out.
 */
function latin1Bytes(text: string): Uint8Array {
  if (text.length > SCRATCH.length) return new Uint8Array(Buffer.from(text, 'latin1'));
  const length = SCRATCH.write(text, 0, 'latin1');
  return SCRATCH_BYTES.slice(0, length);
}
