import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { CID } from 'multiformats/cid';
import * as Digest from 'multiformats/hashes/digest';
import { describe, expect, it } from 'vitest';
import { cidOfBytes, RAW_CODEC, SHA2_256_CODE } from './content-id.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
/** Property runs are CPU-bound; on a shared, loaded machine they can take longer than vitest's 5 s. */
const PROPERTY_TIMEOUT_MS = 120_000;

describe('cidOfBytes', () => {
  it(
    'when given any bytes, then it is the CID the multiformats library builds for them',
    () => {
      fc.assert(
        fc.property(fc.uint8Array({ maxLength: 2048 }), (bytes) => {
          const digest = createHash('sha256').update(bytes).digest();
          const expected = CID.createV1(RAW_CODEC, Digest.create(SHA2_256_CODE, digest)).toString();
          expect(cidOfBytes(bytes)).toBe(expected);
        }),
        { numRuns: RUNS },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );

  it('when given a view into a larger buffer, then it hashes only the view', () => {
    const whole = new TextEncoder().encode('xxhello worldyy');
    expect(cidOfBytes(whole.subarray(2, 13))).toBe(
      'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e',
    );
  });
});
