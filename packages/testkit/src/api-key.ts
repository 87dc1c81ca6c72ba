import { randomBytes } from 'node:crypto';

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A random key of the documented shape, `sk_` and 40 base62 characters: the mock accepts any bearer token. */
export function randomApiKey(): string {
  return `sk_${Array.from(randomBytes(40), (byte) => BASE62[byte % 62]).join('')}`;
}
