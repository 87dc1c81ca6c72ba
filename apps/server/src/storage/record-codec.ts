import type zlib from 'node:zlib';
import { cidOfBytes } from '@scenario-scoring/engine';
import { RECORD_DICTIONARY_1 } from './record-dictionary.js';
import { recordLeafHash } from './record-leaf-hash.js';
import { reusedDeflateRaw, reusedInflateRaw } from './reused-zlib.js';

export { recordLeafHash };

/**
 * How a log record's bytes are stored (`log_records.bytes`), issue 29: compressed, and served as they were
 * made. The first byte says the form:
 *
 * - 0x01, codec 1: raw deflate (RFC 1951; 8 KiB window, level 6) with `RECORD_DICTIONARY_1` as its preset
 *   dictionary, behind that byte. A score-log/2 record of about 1,650 bytes is stored in about 220.
 * - anything else: the record itself, as every record was stored before codec 1 (score-log/1, the first
 *   score-log/2 ones: JSON, so `{`). Such rows stay as they are and are read as they are.
 * - nothing (0 bytes): an erased record (docs/personal-data.md).
 *
 * Deflate rather than zstd: with a preset dictionary, deflate gives smaller records (133 against 149 bytes
 * with the same dictionary, `bench/disk/compression.ts`) in less time, and it can be reset and reused with
 * its dictionary (`ReusedZlib`), which Node's zstd cannot: its reset drops the dictionary.
 *
 * The CID and the leaf hash are of the record's own bytes, never of the stored form, so a proof, a
 * tile, a checkpoint and a witness are what they would be without compression, and `unpackRecord`'s
 * caller checks the CID of what it read (`verifiedRecord`).
 */
export const RECORD_CODEC_1 = 0x01;

/**
 * The largest record `unpackRecord` makes: records are a few kilobytes (erasure-log/1, the largest, lists
 * up to 1,000 CIDs: about 62 KB); a stored form that inflates past this is not one of ours.
 */
const MAX_RECORD_BYTES = 16 * 1024 * 1024;

/** What inflates codec 1's stored form: the deflate's window and dictionary. */
const CODEC_1_STREAM = { windowBits: 13, dictionary: RECORD_DICTIONARY_1 };

/**
 * How many of the dictionary's last bytes codec 1's deflate is primed with. A raw deflate stream refers back
 * by distance, so one made with a suffix of the dictionary inflates with the whole of it to the same record:
 * the bytes it refers to are the same bytes (the dictionary's last ones) either way. Priming the compressor is
 * a quarter of its work (zlib hashes every byte of the dictionary on each reset: `deflateSetDictionary`, 8 % of
 * the SQLite thread under the scoring load), and the last 4 KiB of this dictionary hold what records share:
 * 170 bytes a record against 169 with all of it, 16.0 against 20.6 µs (`bench/disk/compression.ts`).
 */
export const CODEC_1_PRIMING_BYTES = 4096;

/**
 * Codec 1's deflate: its window, the dictionary's last `CODEC_1_PRIMING_BYTES`, level 6. The level, the
 * memory and how much of the dictionary primes the compressor can change: they are not in the format, which
 * is raw deflate that inflates with the whole dictionary (`CODEC_1_STREAM`).
 */
const CODEC_1_OPTIONS: zlib.ZlibOptions = {
  windowBits: CODEC_1_STREAM.windowBits,
  dictionary: RECORD_DICTIONARY_1.subarray(RECORD_DICTIONARY_1.length - CODEC_1_PRIMING_BYTES),
  level: 6,
  memLevel: 5,
};

/** Codec 1's one-shot inflate (the reused stream's fallback), bounded. */
const CODEC_1_INFLATE: zlib.ZlibOptions = { ...CODEC_1_STREAM, maxOutputLength: MAX_RECORD_BYTES };

/** What inflates each codec's stored form, by its first byte (for the SQLite thread's `log_leaf_hash`). */
export const RECORD_CODECS: Record<number, zlib.ZlibOptions> = {
  [RECORD_CODEC_1]: CODEC_1_INFLATE,
};

/** How a record is packed (codec 1), for the SQLite thread's `log_record_pack`: its byte and its deflate. */
export const RECORD_PACKING = { codec: RECORD_CODEC_1, deflate: CODEC_1_OPTIONS } as const;

/** Codec 1's deflate and inflate, one stream each reused (ReusedZlib: the records `zlib.*RawSync` make). */
const DEFLATE_1 = reusedDeflateRaw(CODEC_1_OPTIONS, CODEC_1_INFLATE);
const INFLATE_1 = reusedInflateRaw(CODEC_1_INFLATE, CODEC_1_OPTIONS);

/**
 * The stored form of a record's bytes (codec 1), in a buffer of its own (not a slice of Node's shared pool),
 * so a run's scoring thread can transfer it.
 */
export function packRecord(record: Uint8Array): Buffer {
  const stored = DEFLATE_1.run(record, 1);
  stored[0] = RECORD_CODEC_1;
  return stored;
}

/** Whether `stored` is a packed record (a codec's first byte), rather than a record or an erased one. */
export function isPacked(stored: Uint8Array): boolean {
  return stored.length > 0 && RECORD_CODECS[stored[0] as number] !== undefined;
}

/**
 * The record whose stored form is `stored`, as a Buffer (so `res.send` sends it unchanged): the bytes
 * themselves for a row stored plain (or an erased one's empty bytes). A form from a later codec than
 * this server knows reads as plain bytes, which `verifiedRecord` then refuses (they do not have the CID).
 */
export function unpackRecord(stored: Uint8Array): Buffer {
  const bytes = Buffer.isBuffer(stored)
    ? stored
    : Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength);
  return isPacked(bytes) ? INFLATE_1.run(bytes.subarray(1)) : bytes;
}

/**
 * The record stored as `stored` under `cid`, checked: its CID is `cid` (an erased record, 0 bytes, is
 * returned as it is). A stored form that does not give the record its CID names (a damaged file, a
 * row written by hand) throws rather than being served.
 */
export function verifiedRecord(stored: Uint8Array, cid: string): Buffer {
  let record: Buffer;
  try {
    record = unpackRecord(stored);
  } catch (error) {
    throw new DamagedRecordError(cid, { cause: error });
  }
  if (record.length > 0 && cidOfBytes(record) !== cid) throw new DamagedRecordError(cid);
  return record;
}

/** A stored record that does not give the record its CID names (see `verifiedRecord`). */
export class DamagedRecordError extends Error {
  constructor(
    readonly cid: string,
    options?: ErrorOptions,
  ) {
    super(`log record ${cid}: its stored bytes do not have its CID (the row is damaged)`, options);
    this.name = 'DamagedRecordError';
  }
}
