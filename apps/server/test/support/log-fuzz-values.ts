/**
 * Invalid values for the verifiable log's query and path numbers (tree sizes, tile levels, indexes and
 * widths): out of the contract's bounds, beyond JavaScript's safe integers, or not plain decimals at all,
 * which a lenient parser (Number(), ajv's coercion) would read as a number. Each must be refused 400.
 */
import fc from 'fast-check';
import { hostileString } from './hostile-values.js';

/** 2^53: the first integer the contract's bounds (≤ 2^53 - 1) refuse. */
export const TWO_POW_53 = '9007199254740992';
/** 2^53 - 1: the largest tree size or tile index the contract accepts. */
export const MAX_SAFE = '9007199254740991';

/** Not decimal integers, in any position: each must be refused whatever the bounds. */
const notDecimal = [
  '0x10',
  '0b1',
  '0o7',
  '1e1',
  '+5',
  ' 5',
  '5 ',
  '1.5',
  '5.0',
  '',
  'NaN',
  'Infinity',
  '１',
  TWO_POW_53,
  '9'.repeat(30),
];

const hostileText = hostileString
  .filter((h) => h.value.length < 1000)
  .map((h) => h.value.replace(/[\ud800-\udfff]/gu, '\ufffd'))
  // A string that is a decimal integer would be a valid value, not a hostile one.
  .filter((text) => !/^\d+$/.test(text));

/** A query or path value that is invalid for an integer of [min, max] (max ≤ 2^53 - 1). */
export function badInteger(min: number, max: number): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...notDecimal) },
    {
      weight: 2,
      arbitrary: fc
        .oneof(
          fc.integer({ min: -1_000_000, max: min - 1 }),
          max < Number.MAX_SAFE_INTEGER
            ? fc.integer({ min: max + 1, max: max + 1_000_000 })
            : fc.constant(Number.MAX_SAFE_INTEGER + 1),
        )
        .map(String),
    },
    { weight: 2, arbitrary: hostileText },
  );
}

/** A value that is invalid in a path segment: percent-encoded, never empty (an empty segment is another path). */
export const inPath = (value: string) => encodeURIComponent(value) || '%20';
