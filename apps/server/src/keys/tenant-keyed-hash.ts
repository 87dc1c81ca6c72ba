import { createHmac } from 'node:crypto';

/** What a tenant-keyed hash is for; each purpose has keys of its own, so no two uses share a hash. */
export type KeyedHashPurpose = 'subject' | 'idempotency-request';

/**
 * Keyed hashes of personal data (a subject identifier, a request body), one key per tenant and purpose,
 * derived from the deployment's secret: HMAC-SHA256(HMAC-SHA256(secret, "scenario-scoring/<purpose>/v1\n"
 * + tenant), value), as lowercase hex. Equal values of one tenant hash alike, so an index can find them;
 * another tenant's, or another deployment's, do not, and without the secret no one can test a guess
 * against a stored hash (an unkeyed SHA-256 of a subject or a body could be).
 */
export class TenantKeyedHash {
  readonly #secret: Uint8Array;
  readonly #keys = new Map<string, Buffer>();

  /** `secret`: the deployment's secret (the `SECRETS_KEY` bytes), at least 32 bytes. */
  constructor(secret: Uint8Array) {
    if (secret.length < 32) throw new RangeError('a tenant-keyed hash needs a secret of at least 32 bytes');
    this.#secret = secret;
  }

  /** The keyed hash of `value` for `tenantId` and `purpose`: 64 lowercase hex digits. */
  hash(purpose: KeyedHashPurpose, tenantId: string, value: string | Uint8Array): string {
    return createHmac('sha256', this.#key(purpose, tenantId)).update(value).digest('hex');
  }

  #key(purpose: KeyedHashPurpose, tenantId: string): Buffer {
    const id = `${purpose}\n${tenantId}`;
    let key = this.#keys.get(id);
    if (key === undefined) {
      key = createHmac('sha256', this.#secret).update(`scenario-scoring/${purpose}/v1\n${tenantId}`).digest();
      // Bounded by the tenants × purposes an instance serves; a key is 32 bytes.
      this.#keys.set(id, key);
    }
    return key;
  }
}
