import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadSecretsKey, SECRETS_KEY_FILE_NAME, SecretBox, SecretBoxError } from './secret-box.js';

describe('SecretBox', () => {
  it('opens what it sealed, and the sealed text reveals nothing of the secret', () => {
    const box = new SecretBox(randomBytes(32));
    const sealed = box.seal('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw6VGNO8XrBJI=');
    expect(sealed).not.toContain('MfKQ9r8');
    expect(box.open(sealed)).toBe('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw6VGNO8XrBJI=');
    expect(box.seal('same')).not.toBe(box.seal('same'));
  });

  it('refuses a secret sealed under another key, or altered', () => {
    const sealed = new SecretBox(randomBytes(32)).seal('whsec_x');
    expect(() => new SecretBox(randomBytes(32)).open(sealed)).toThrow(SecretBoxError);
    const box = new SecretBox(randomBytes(32));
    const altered = box.seal('whsec_x').replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'));
    expect(() => box.open(altered)).toThrow(SecretBoxError);
  });
});

describe('loadSecretsKey', () => {
  it('generates a key file readable by its owner only, and keeps it across starts', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'ss-key-'));
    try {
      const first = await loadSecretsKey({ secretsKey: undefined, dataDir });
      expect(first).toHaveLength(32);
      expect((await stat(join(dataDir, SECRETS_KEY_FILE_NAME))).mode & 0o777).toBe(0o600);
      expect(await loadSecretsKey({ secretsKey: undefined, dataDir })).toEqual(first);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('uses SECRETS_KEY when configured', async () => {
    const key = randomBytes(32);
    expect(await loadSecretsKey({ secretsKey: key.toString('base64'), dataDir: '/nonexistent' })).toEqual(
      key,
    );
  });
});
