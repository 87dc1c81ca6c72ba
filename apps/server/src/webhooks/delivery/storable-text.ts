/**
 * Text from outside (a receiver's response body, an error message) made storable: what both databases
 * keep identically. Invalid UTF-8 decodes to U+FFFD, and U+0000 — which PostgreSQL refuses in a text
 * column, failing the whole batch it is written in — is replaced by U+FFFD too. `replaced` says whether
 * the stored text differs from the bytes received.
 */
export interface StorableText {
  text: string;
  replaced: boolean;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is exactly what is replaced.
const NUL = /\u0000/g;
const LONE_SURROGATE = /[\ud800-\udfff]/gu;

/** Decodes `bytes` as UTF-8 into storable text. */
export function storableFromBytes(bytes: Buffer): StorableText {
  const decoded = bytes.toString('utf8');
  // Valid UTF-8 round-trips byte for byte; anything else had bytes replaced on decoding.
  const lossy = Buffer.byteLength(decoded) !== bytes.length || !Buffer.from(decoded).equals(bytes);
  const text = decoded.replace(NUL, '\ufffd');
  return { text, replaced: lossy || text !== decoded };
}

/** Makes a string storable: NUL and lone surrogates become U+FFFD. */
export function storableString(value: string): string {
  return value.replace(NUL, '\ufffd').replace(LONE_SURROGATE, '\ufffd');
}
