import { hash } from 'node:crypto';

/** The multicodec of raw bytes: the CID names the record's exact bytes, not a decoded structure. */
export const RAW_CODEC = 0x55;
/** The multihash code of sha2-256. */
export const SHA2_256_CODE = 0x12;
/** A sha2-256 digest's length in bytes, as the multihash writes it. */
const SHA2_256_LENGTH = 32;
/** CID version 1. */
const CID_V1 = 0x01;
/** The multibase prefix of base32 lower case without padding (RFC 4648 §6). */
const BASE32_PREFIX = 'b';
const BASE32_ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';

/**
 * The CIDv1 (raw codec, sha2-256, base32 `bafkrei…`) of some bytes: what IPFS tooling gives the same bytes.
 * Written out rather than built with `multiformats` (which the tests compare it against), because it sits
 * on every scoring's hot path and the library's CID object and generic base encoder cost more than the hash.
 * All four header values are below 0x80, so each is one varint byte.
 */
export function cidOfBytes(bytes: Uint8Array): string {
  const digest = hash('sha256', bytes, 'buffer');
  const cid = new Uint8Array(4 + SHA2_256_LENGTH);
  cid[0] = CID_V1;
  cid[1] = RAW_CODEC;
  cid[2] = SHA2_256_CODE;
  cid[3] = SHA2_256_LENGTH;
  cid.set(digest, 4);
  return base32(cid);
}

/** The base32 alphabet's character codes. */
const BASE32_CODES = Uint8Array.from(BASE32_ALPHABET, (c) => c.charCodeAt(0));
/** Where the multibase prefix and base32 characters are written before they become one string. */
const CHARS = Buffer.allocUnsafeSlow(64);

/**
 * The multibase prefix and RFC 4648 base32 (lower case, without padding) of a CID: 5 bits per character, the
 * last group zero-filled. The characters are written as bytes into a scratch buffer and read out as one
 * string, instead of one string concatenation per character.
 */
function base32(bytes: Uint8Array): string {
  const chars = bytes.length * 2 > CHARS.length ? Buffer.allocUnsafe(bytes.length * 2) : CHARS;
  chars[0] = BASE32_PREFIX.charCodeAt(0);
  let length = 1;
  let buffer = 0;
  let bits = 0;
  for (let i = 0; i < bytes.length; i++) {
    buffer = ((buffer << 8) | (bytes[i] as number)) & 0xfff; // never more than 12 bits are pending
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      chars[length++] = BASE32_CODES[(buffer >>> bits) & 31] as number;
    }
  }
  if (bits > 0) chars[length++] = BASE32_CODES[(buffer << (5 - bits)) & 31] as number;
  return chars.toString('latin1', 0, length);
}
