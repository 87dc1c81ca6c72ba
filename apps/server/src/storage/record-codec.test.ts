import { createHash, randomBytes } from 'node:crypto';
import zlib from 'node:zlib';
import { cidOfBytes } from '@scenario-scoring/engine';
import { describe, expect, it } from 'vitest';
import {
  CODEC_1_PRIMING_BYTES,
  isPacked,
  packRecord,
  RECORD_CODEC_1,
  RECORD_CODECS,
  recordLeafHash,
  unpackRecord,
  verifiedRecord,
} from './record-codec.js';
import { RECORD_DICTIONARY_1 } from './record-dictionary.js';

describe('the log record codec', () => {
  it('keeps codec 1’s dictionary byte for byte (records stored with it are read with it forever)', () => {
    expect(RECORD_DICTIONARY_1.length).toBe(8192);
    expect(createHash('sha256').update(RECORD_DICTIONARY_1).digest('hex')).toBe(
      '94995b01510c7cea9dd05d86f9d76f67e2bbeda8b50918893030becda6668e12',
    );
  });

  it('gives back exactly the bytes it packed, whatever they hold', () => {
    for (let n = 0; n < 200; n++) {
      const record = randomBytes(n * 37);
      const stored = packRecord(record);
      expect(stored[0]).toBe(RECORD_CODEC_1);
      expect(isPacked(stored)).toBe(true);
      expect(unpackRecord(stored).equals(record)).toBe(true);
    }
  });

  it('is raw deflate with the dictionary behind one byte, as RECORD_CODECS tells the SQLite thread', () => {
    const record = Buffer.from('{"schema":"score-log/2","subject":"s"}');
    const stored = packRecord(record);
    const codec = RECORD_CODECS[stored[0] as number];
    expect(codec).toBeDefined();
    expect(zlib.inflateRawSync(stored.subarray(1), codec).equals(record)).toBe(true);
  });

  it('primes its deflate with the dictionary’s last 4 KiB: the stream inflates with the whole dictionary, and rows packed with all of it still read', () => {
    // Records made of the dictionary's own pieces, from both halves, so distances reach into either.
    const whole = { windowBits: 13, dictionary: RECORD_DICTIONARY_1 };
    for (let n = 0; n < 100; n++) {
      const pieces = [0, 1, 2, 3].map((k) => {
        const at = (n * 977 + k * 2039) % 8000;
        return RECORD_DICTIONARY_1.subarray(at, at + 20 + ((n + k) % 150));
      });
      const record = Buffer.concat([...pieces, randomBytes(n % 40), ...pieces.reverse()]);
      const stored = packRecord(record);
      expect(zlib.inflateRawSync(stored.subarray(1), whole).equals(record)).toBe(true);
      const before = Buffer.concat([
        Buffer.from([RECORD_CODEC_1]),
        zlib.deflateRawSync(record, { ...whole, level: 6, memLevel: 5 }),
      ]);
      expect(unpackRecord(before).equals(record)).toBe(true);
    }
    expect(CODEC_1_PRIMING_BYTES).toBe(4096);
  });

  it('reads plain and erased rows as they are; a later codec’s form reads as plain, which its CID refuses', () => {
    const plain = Buffer.from('{"schema":"score-log/1"}');
    expect(unpackRecord(plain)).toBe(plain);
    expect(isPacked(plain)).toBe(false);
    expect(unpackRecord(new Uint8Array(0)).length).toBe(0);
    const later = Buffer.from([0x02, 0x4b, 0x00]);
    expect(isPacked(later)).toBe(false);
    expect(() => verifiedRecord(later, cidOfBytes(plain))).toThrow(/do not have its CID/);
  });

  it('checks the CID of what it read, and hashes leaves over the record’s own bytes', () => {
    const record = Buffer.from('{"schema":"score-log/2","n":1}');
    const cid = cidOfBytes(record);
    expect(verifiedRecord(packRecord(record), cid).equals(record)).toBe(true);
    expect(verifiedRecord(new Uint8Array(0), cid).length).toBe(0);
    expect(() => verifiedRecord(packRecord(Buffer.from('{"n":2}')), cid)).toThrow(/do not have its CID/);
    expect(recordLeafHash(record).toString('hex')).toBe(
      createHash('sha256')
        .update(Buffer.concat([Buffer.from([0]), record]))
        .digest('hex'),
    );
  });
});
