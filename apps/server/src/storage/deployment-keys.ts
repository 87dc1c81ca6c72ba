import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from './database.js';

/**
 * The constant `SECRETS_KEY` is checked with: its check value is HMAC-SHA256(key, this), which proves the
 * key without revealing it, and (unlike a plain hash of the key) cannot be used to test guesses of it
 * without the key itself.
 */
export const SECRETS_KEY_CHECK_LABEL = 'scenario-scoring/secrets-key-check/v1';

/** The keys every instance on one database must share, and what an instance with another one is told. */
export interface DeploymentKeys {
  /** The key webhook secrets are sealed with (`SECRETS_KEY`, or DATA_DIR's generated one). */
  secretsKey: Uint8Array;
  /** The log's public verifier key (from `LOG_SIGNING_KEY` and `LOG_KEY_NAME`, or DATA_DIR's generated key). */
  logVerifierKey: string;
  /**
   * The origin its checkpoints are signed under (`LOG_ORIGIN`): one log, one origin. With `LOG_KEY_NAME`
   * set apart from it the verifier key does not hold it, so it is checked on its own.
   */
  logOrigin?: string;
}

/** Thrown when an instance's key differs from the one the database was set up with; it names the variable. */
export class KeyMismatchError extends Error {
  override readonly name = 'KeyMismatchError';
}

/** The check value of a secrets key: base64 of HMAC-SHA256(key, SECRETS_KEY_CHECK_LABEL). */
export function secretsKeyCheck(key: Uint8Array): string {
  return createHmac('sha256', key).update(SECRETS_KEY_CHECK_LABEL).digest('base64');
}

const MISMATCH: Record<'secrets_key' | 'log_verifier_key' | 'log_origin', string> = {
  secrets_key:
    'SECRETS_KEY does not match the key this database was set up with: start every instance with the same ' +
    "SECRETS_KEY (the first instance's; with the embedded database, the DATA_DIR it was created in). " +
    'Nothing was changed.',
  log_verifier_key:
    "LOG_SIGNING_KEY does not match the key this database's log is signed with, or its key name differs " +
    '(LOG_KEY_NAME, which defaults to LOG_ORIGIN): ' +
    "start every instance with the same LOG_SIGNING_KEY, LOG_ORIGIN and LOG_KEY_NAME (the first instance's; with the " +
    'embedded database, the DATA_DIR it was created in). Nothing was changed.',
  log_origin:
    "LOG_ORIGIN is not the origin this database's log is signed under: start every instance with the same " +
    "LOG_ORIGIN (the first instance's), or its checkpoints would name another log. Nothing was changed.",
};

/**
 * Proves the instance's keys are the database's: the first instance to start stores their check values
 * (insert-if-absent, so instances starting together store one and compare with it), every instance then
 * compares its own with the stored ones and throws KeyMismatchError on a difference, before it writes
 * anything else. A stored value is never rewritten: replacing a key is a migration of the data sealed or
 * signed under it, not a restart.
 */
export async function checkDeploymentKeys(
  db: Kysely<Database>,
  keys: DeploymentKeys,
  now: Date,
): Promise<void> {
  const mine: Partial<Record<keyof typeof MISMATCH, string>> = {
    secrets_key: secretsKeyCheck(keys.secretsKey),
    log_verifier_key: keys.logVerifierKey,
    ...(keys.logOrigin !== undefined && { log_origin: keys.logOrigin }),
  };
  const createdAt = now.toISOString();
  await db
    .insertInto('deployment_keys')
    .values(Object.entries(mine).map(([name, value]) => ({ name, value, created_at: createdAt })))
    .onConflict((conflict) => conflict.column('name').doNothing())
    .execute();
  const stored = await db.selectFrom('deployment_keys').select(['name', 'value']).execute();
  const problems = (Object.keys(mine) as (keyof typeof MISMATCH)[])
    .filter((name) => {
      const value = stored.find((row) => row.name === name)?.value;
      return value === undefined || !sameText(value, mine[name] as string);
    })
    .map((name) => MISMATCH[name]);
  if (problems.length > 0) throw new KeyMismatchError(problems.join('\n'));
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
