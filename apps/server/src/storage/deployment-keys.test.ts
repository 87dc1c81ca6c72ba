import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { forEachDatabase } from '../../test/support/test-databases.js';
import {
  checkDeploymentKeys,
  KeyMismatchError,
  SECRETS_KEY_CHECK_LABEL,
  secretsKeyCheck,
} from './deployment-keys.js';

const FIRST = { secretsKey: randomBytes(32), logVerifierKey: 'test-log+01234567+AQID' };
const NOW = new Date('2026-11-22T10:00:00.000Z');

forEachDatabase('the deployment key check', ({ storage }) => {
  const stored = () =>
    storage().db.selectFrom('deployment_keys').select(['name', 'value']).orderBy('name').execute();

  it("stores the first instance's check values, neither of them the secrets key or its plain hash", async () => {
    await checkDeploymentKeys(storage().db, FIRST, NOW);
    const rows = await stored();
    expect(rows).toEqual([
      { name: 'log_verifier_key', value: FIRST.logVerifierKey },
      { name: 'secrets_key', value: secretsKeyCheck(FIRST.secretsKey) },
    ]);
    expect(rows[1]?.value).not.toContain(FIRST.secretsKey.toString('base64'));
    expect(SECRETS_KEY_CHECK_LABEL).toBe('scenario-scoring/secrets-key-check/v1');
  });

  it('accepts an instance with the same keys, again and again', async () => {
    await checkDeploymentKeys(storage().db, FIRST, NOW);
    await checkDeploymentKeys(storage().db, { ...FIRST }, new Date());
  });

  it('refuses another SECRETS_KEY, naming it, and never rewrites the stored value', async () => {
    const before = await stored();
    const other = { ...FIRST, secretsKey: randomBytes(32) };
    const refusal = checkDeploymentKeys(storage().db, other, NOW);
    await expect(refusal).rejects.toBeInstanceOf(KeyMismatchError);
    await expect(refusal).rejects.toThrow(
      /^SECRETS_KEY does not match the key this database was set up with: start every instance with the same SECRETS_KEY .*Nothing was changed\.$/,
    );
    expect(await stored()).toEqual(before);
  });

  it('refuses another log signing key, naming LOG_SIGNING_KEY, and never rewrites the stored value', async () => {
    const before = await stored();
    const other = { ...FIRST, logVerifierKey: 'test-log+89abcdef+AQID' };
    await expect(checkDeploymentKeys(storage().db, other, NOW)).rejects.toThrow(
      /^LOG_SIGNING_KEY does not match .*LOG_KEY_NAME.*Nothing was changed\.$/,
    );
    expect(await stored()).toEqual(before);
  });

  it('names both variables when both keys differ', async () => {
    const other = { secretsKey: randomBytes(32), logVerifierKey: 'other+89abcdef+AQID' };
    await expect(checkDeploymentKeys(storage().db, other, NOW)).rejects.toThrow(
      /SECRETS_KEY does not match[\s\S]*\nLOG_SIGNING_KEY does not match/,
    );
  });
});
