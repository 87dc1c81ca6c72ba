/**
 * Hostile values for fuzzing: strings the text policy refuses (NUL, lone surrogates), strings it accepts
 * although they often break software (U+FFFF, RTL overrides, BOM, combining marks, 1 MB), and values of the
 * wrong type. Each comes with whether the contract plus the text policy must refuse it wherever a string
 * is expected.
 */
import fc from 'fast-check';

/** A hostile string, and whether a request carrying it in a string field must be refused (4xx). */
export interface HostileString {
  value: string;
  refused: boolean;
}

const ONE_MB = 1_000_000;

export const hostileString: fc.Arbitrary<HostileString> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .constantFrom('\u0000', 'a\u0000b', '\ud800', 'x\udfff', '\udc00\ud800', 'ok\ud83d')
      .map((value) => ({ value, refused: true })),
  },
  {
    weight: 3,
    arbitrary: fc
      .constantFrom(
        '\uffff',
        '\u202eevil',
        '\u200f\u200e',
        '\ufeffbom',
        'e\u0301',
        '😀'.repeat(3),
        ' ',
        '"\\\'<>&',
      )
      .map((value) => ({ value, refused: false })),
  },
  // Any UTF-16 string at all: whether it is refused is what the text policy says of it.
  {
    weight: 3,
    arbitrary: fc.string({ unit: 'binary', maxLength: 40 }).map((value) => ({
      value,
      // biome-ignore lint/suspicious/noControlCharactersInRegex: the text policy refuses exactly these.
      refused: /\u0000|[\ud800-\udfff]/u.test(value),
    })),
  },
  { weight: 1, arbitrary: fc.constant({ value: 'a'.repeat(ONE_MB), refused: true }) },
);

/** A value of the wrong type for a string, number, object or array field. */
export const wrongTyped: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double({ noNaN: true }),
  fc.constant([]),
  fc.constant({}),
  fc.constant(1e308),
);
