import { createHash, createHmac, type Hash } from 'node:crypto';

/** What a tenant-keyed hash is for; each purpose has keys of its own, so no two uses share a hash. */
export type KeyedHashPurpose = 'subject' | 'idempotency-request';

const BLOCK_BYTES = 64;

/**
 * Keyed hashes of personal data (a subject identifier, a request body), one key per tenant and purpose,
 * derived from the deployment's secret: HMAC-SHA256(HMAC-SHA256(secret, "scenario-scoring/<purpose>/v1\n"
 * + tenant), value), as lowercase hex. Equal values of one tenant hash alike, so an index can find them;
 * another tenant's, or another deployment's, do not, and without the secret no one can test a guess
 * against a stored hash (an unkeyed SHA-256 of a subject or a body could be).
 *
 * Each scoring hashes its subject, so the HMAC of RFC 2104 is computed from SHA-256 states that have
 * absorbed the key's inner and outer pads once per tenant and purpose (copied per value), instead of
 * `createHmac`, which makes a key object for every call.
 */
export class TenantKeyedHash {
  readonly #secret: Uint8Array;
  readonly #pads = new Map<string, { inner: Hash; outer: Hash }>();

  /** `secret`: the deployment's secret (the `SECRETS_KEY` bytes), at least 32 bytes. */
  constructor(secret: Uint8Array) {
    if (secret.length < 32) throw new RangeError('a tenant-keyed hash needs a secret of at least 32 bytes');
    this.#secret = secret;
  }

  /** The keyed hash of `value` for `tenantId` and `purpose`: 64 lowercase hex digits. */
  hash(purpose: KeyedHashPurpose, tenantId: string, value: string | Uint8Array): string {
    const { inner, outer } = this.#padsOf(purpose, tenantId);
    const innerDigest = inner.copy().update(value).digest();
    return outer.copy().update(innerDigest).digest('hex');
  }

  #padsOf(purpose: KeyedHashPurpose, tenantId: string): { inner: Hash; outer: Hash } {
    const id = `${purpose}\n${tenantId}`;
    let pads = this.#pads.get(id);
    if (pads === undefined) {
      // A 32-byte key, shorter than SHA-256's block: padded with zeros, then XORed with 0x36 and 0x5c.
      const key = createHmac('sha256', this.#secret)
        .update(`scenario-scoring/${purpose}/v1\n${tenantId}`)
        .digest();
      const block = Buffer.alloc(BLOCK_BYTES);
      key.copy(block);
      pads = {
        inner: createHash('sha256').update(block.map((byte) => byte ^ 0x36)),
        outer: createHash('sha256').update(block.map((byte) => byte ^ 0x5c)),
      };
      // Bounded by the tenants × purposes an instance serves.
      this.#pads.set(id, pads);
    }
    return pads;
  }
}
