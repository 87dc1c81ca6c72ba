import { randomFillSync } from 'node:crypto';
import type { LogRecordIdentity, LogRecordStamp } from '@scenario-scoring/engine';

/** Salts drawn from the CSPRNG at once, then handed out 32 bytes each (one system call per 128 salts). */
const SALT_BYTES = 32;
const POOL = Buffer.allocUnsafeSlow(SALT_BYTES * 128);
let next = POOL.length;

/**
 * A fresh score-log/2 salt: 32 bytes from the CSPRNG (`crypto.randomFillSync`), base64url without padding
 * (43 characters). Each salt is used by one record only and is written nowhere else; the pool's bytes are
 * overwritten before they are handed out again.
 */
export function recordSalt(): string {
  if (next === POOL.length) {
    randomFillSync(POOL);
    next = 0;
  }
  const salt = POOL.toString('base64url', next, next + SALT_BYTES);
  POOL.fill(0, next, next + SALT_BYTES);
  next += SALT_BYTES;
  return salt;
}

/** The stamp of a scoring the server makes now: its identity, its time (`toISOString`) and a fresh salt. */
export function recordStamp(identity: LogRecordIdentity, scoredAt: Date): LogRecordStamp {
  return { identity, scored_at: scoredAt.toISOString(), salt: recordSalt() };
}
