import { randomFillSync } from 'node:crypto';
import { monotonicFactory } from 'ulid';

const POOL_BYTES = 4096;
const pool = new Uint8Array(POOL_BYTES);
let poolIndex = POOL_BYTES;

/**
 * A CSPRNG fraction in [0, 1) in steps of 1/256, drawn from a pool refilled 4 KiB at a time. ulid's own
 * PRNG asks the OS for one byte per character (16 calls per id), a measurable share of a request's time;
 * 256 is a multiple of 32, so each base32 character stays uniform.
 */
function pooledRandom(): number {
  if (poolIndex === POOL_BYTES) {
    randomFillSync(pool);
    poolIndex = 0;
  }
  return (pool[poolIndex++] as number) / 256;
}

/**
 * Monotonic within the process: two ids made in the same millisecond share its time part and the second's
 * random part is the first's plus one, so ids sort in the order they were made (the API's "sortable" holds
 * for things created in one burst, such as a tenant's keys listed oldest first), not in a random order.
 */
const monotonicUlid = monotonicFactory(pooledRandom);

/** A new identifier: `prefix` + `_` + ULID (time-sortable, 26 Crockford base32 characters), e.g. `req_01J…`. */
export function newId(prefix: string): string {
  return `${prefix}_${monotonicUlid()}`;
}
