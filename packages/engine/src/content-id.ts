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
  return BASE32_PREFIX + base32(cid);
}

/** RFC 4648 base32, lower case, without padding: 5 bits per character, the last group zero-filled. */
function base32(bytes: Uint8Array): string {
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = ((buffer << 8) | byte) & 0xfff; // never more than 12 bits are pending
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += BASE32_ALPHABET[(buffer >>> bits) & 31];
    }
  }
  if (bits > 0) out += BASE32_ALPHABET[(buffer << (5 - bits)) & 31];
  return out;
}
