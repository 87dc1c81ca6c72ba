import { createHash, createHmac, type Hash, hash } from 'node:crypto';

/** What a tenant-keyed hash is for; each purpose has keys of its own, so no two uses share a hash. */
export type KeyedHashPurpose = 'subject' | 'idempotency-request';

const BLOCK_BYTES = 64;
const DIGEST_BYTES = 32;
/** Values up to this many bytes are hashed in one call each (see `hash`); longer ones stream. */
const ONE_SHOT_BYTES = 4096;
/** The inner pad then the value, for the one-shot inner hash (synchronous, so one buffer serves all). */
const INNER_INPUT = Buffer.allocUnsafeSlow(BLOCK_BYTES + ONE_SHOT_BYTES);
/** The outer pad then the inner digest. */
const OUTER_INPUT = Buffer.allocUnsafeSlow(BLOCK_BYTES + DIGEST_BYTES);

/**
 * Keyed hashes of personal data (a subject identifier, a request body), one key per tenant and purpose,
 * derived from the deployment's secret: HMAC-SHA256(HMAC-SHA256(secret, "scenario-scoring/<purpose>/v1\n"
 * + tenant), value), as lowercase hex. Equal values of one tenant hash alike, so an index can find them;
 * another tenant's, or another deployment's, do not, and without the secret no one can test a guess
 * against a stored hash (an unkeyed SHA-256 of a subject or a body could be).
 *
 * Each scoring hashes its subject, so the HMAC of RFC 2104 is computed from the key's inner and outer
 * pads, made once per tenant and purpose, instead of `createHmac`, which makes a key object for every
 * call: a value of up to 4 KiB is hashed by two one-shot `crypto.hash` calls over pad + value and pad +
 * inner digest (about half the time of copying SHA-256 states that absorbed the pads, which longer values
 * such as request bodies still use, streaming instead of copying them).
 */
export class TenantKeyedHash {
  readonly #secret: Uint8Array;
  readonly #pads = new Map<string, Pads>();

  /** `secret`: the deployment's secret (the `SECRETS_KEY` bytes), at least 32 bytes. */
  constructor(secret: Uint8Array) {
    if (secret.length < 32) throw new RangeError('a tenant-keyed hash needs a secret of at least 32 bytes');
    this.#secret = secret;
  }

  /** The keyed hash of `value` for `tenantId` and `purpose`: 64 lowercase hex digits. */
  hash(purpose: KeyedHashPurpose, tenantId: string, value: string | Uint8Array): string {
    const pads = this.#padsOf(purpose, tenantId);
    // A string's UTF-8 takes at most 3 bytes per UTF-16 unit: short ones fit without measuring them.
    const fits =
      typeof value === 'string' ? value.length * 3 <= ONE_SHOT_BYTES : value.length <= ONE_SHOT_BYTES;
    if (!fits) {
      const innerDigest = pads.inner.copy().update(value).digest();
      return pads.outer.copy().update(innerDigest).digest('hex');
    }
    INNER_INPUT.set(pads.innerBlock, 0);
    let length = value.length;
    if (typeof value === 'string') length = INNER_INPUT.write(value, BLOCK_BYTES, 'utf8');
    else INNER_INPUT.set(value, BLOCK_BYTES);
    const innerDigest = hash('sha256', INNER_INPUT.subarray(0, BLOCK_BYTES + length), 'buffer');
    OUTER_INPUT.set(pads.outerBlock, 0);
    innerDigest.copy(OUTER_INPUT, BLOCK_BYTES);
    return hash('sha256', OUTER_INPUT, 'hex');
  }

  #padsOf(purpose: KeyedHashPurpose, tenantId: string): Pads {
    const id = `${purpose}\n${tenantId}`;
    let pads = this.#pads.get(id);
    if (pads === undefined) {
      // A 32-byte key, shorter than SHA-256's block: padded with zeros, then XORed with 0x36 and 0x5c.
      const key = createHmac('sha256', this.#secret)
        .update(`scenario-scoring/${purpose}/v1\n${tenantId}`)
        .digest();
      const block = Buffer.alloc(BLOCK_BYTES);
      key.copy(block);
      const innerBlock = block.map((byte) => byte ^ 0x36);
      const outerBlock = block.map((byte) => byte ^ 0x5c);
      pads = {
        innerBlock,
        outerBlock,
        inner: createHash('sha256').update(innerBlock),
        outer: createHash('sha256').update(outerBlock),
      };
      // Bounded by the tenants × purposes an instance serves.
      this.#pads.set(id, pads);
    }
    return pads;
  }
}

/** A key's HMAC pads: the blocks, and SHA-256 states that absorbed them (for values too long to copy). */
interface Pads {
  innerBlock: Uint8Array;
  outerBlock: Uint8Array;
  inner: Hash;
  outer: Hash;
}
