import { hash, randomBytes } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY_RANDOM_CHARS = 40;
/** Bytes below 248 (= 4 × 62) map onto base62 without bias; the others are drawn again. */
const UNBIASED_BYTE_LIMIT = 248;

/** An API key: `sk_` and 40 base62 characters (about 238 bits of randomness). */
export const API_KEY_PATTERN = /^sk_[0-9A-Za-z]{40}$/;

/** A new random API key, drawn from the CSPRNG with rejection sampling so every character is uniform. */
export function generateApiKey(): string {
  let chars = '';
  while (chars.length < KEY_RANDOM_CHARS) {
    for (const byte of randomBytes(KEY_RANDOM_CHARS)) {
      if (byte < UNBIASED_BYTE_LIMIT && chars.length < KEY_RANDOM_CHARS) chars += BASE62[byte % 62];
    }
  }
  return `sk_${chars}`;
}

/**
 * The SHA-256 (hex) of a key: what is stored and looked up. A fast hash suffices because keys carry
 * ~238 random bits, and looking keys up by hash means the plaintext is never compared byte by byte.
 * Node's one-shot `hash`, cheaper than a Hash object (create, update, digest): every authenticated
 * request makes one.
 */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}
