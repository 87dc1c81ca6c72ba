import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { TenantKeyedHash } from './tenant-keyed-hash.js';

describe('TenantKeyedHash', () => {
  const secret = randomBytes(32);
  const hashes = new TenantKeyedHash(secret);

  it('is HMAC-SHA256 under a key derived per tenant and purpose, as its comment spells out', () => {
    const key = createHmac('sha256', secret).update('scenario-scoring/subject/v1\ntenant-a').digest();
    const expected = createHmac('sha256', key).update('applicant-1').digest('hex');
    expect(hashes.hash('subject', 'tenant-a', 'applicant-1')).toBe(expected);
  });

  it('hashes one tenant’s equal values alike, and differs across tenants, purposes and secrets', () => {
    const a = hashes.hash('subject', 'tenant-a', 'applicant-1');
    expect(hashes.hash('subject', 'tenant-a', 'applicant-1')).toBe(a);
    expect(hashes.hash('subject', 'tenant-b', 'applicant-1')).not.toBe(a);
    expect(hashes.hash('idempotency-request', 'tenant-a', 'applicant-1')).not.toBe(a);
    expect(new TenantKeyedHash(randomBytes(32)).hash('subject', 'tenant-a', 'applicant-1')).not.toBe(a);
    expect(a).toMatch(/^[0-9a-f]{64}$/);
  });

  it('refuses a secret shorter than 32 bytes', () => {
    expect(() => new TenantKeyedHash(randomBytes(16))).toThrow(RangeError);
  });
});

describe('TenantKeyedHash, against createHmac', () => {
  it('equals HMAC-SHA256 under the derived key for any value, text or bytes, each time', async () => {
    const { default: fc } = await import('fast-check');
    const secret = randomBytes(32);
    const hashes = new TenantKeyedHash(secret);
    fc.assert(
      fc.property(fc.string(), fc.uint8Array(), fc.string({ minLength: 1 }), (text, bytes, tenant) => {
        const key = createHmac('sha256', secret).update(`scenario-scoring/subject/v1\n${tenant}`).digest();
        expect(hashes.hash('subject', tenant, text)).toBe(
          createHmac('sha256', key).update(text).digest('hex'),
        );
        expect(hashes.hash('subject', tenant, bytes)).toBe(
          createHmac('sha256', key).update(bytes).digest('hex'),
        );
      }),
    );
  });

  it('equals it too for values around the one-shot bound (4 KiB) and far past it, in any unit width', async () => {
    const { default: fc } = await import('fast-check');
    const secret = randomBytes(32);
    const hashes = new TenantKeyedHash(secret);
    const key = createHmac('sha256', secret).update('scenario-scoring/idempotency-request/v1\nt').digest();
    const expectHmac = (value: string | Uint8Array) =>
      expect(hashes.hash('idempotency-request', 't', value)).toBe(
        createHmac('sha256', key).update(value).digest('hex'),
      );
    for (const length of [0, 1, 1365, 1366, 1367, 4095, 4096, 4097, 20_000]) {
      expectHmac('a'.repeat(length));
      expectHmac('é'.repeat(length));
      expectHmac('😀'.repeat(length));
      expectHmac(randomBytes(length));
    }
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme', minLength: 1000, maxLength: 3000 }),
        fc.uint8Array({ minLength: 4000, maxLength: 4200 }),
        (text, bytes) => {
          expectHmac(text);
          expectHmac(bytes);
        },
      ),
      { numRuns: 50 },
    );
  });
});
