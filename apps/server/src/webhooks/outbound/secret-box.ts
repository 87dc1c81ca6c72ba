import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const FORMAT = 'v1';
/** The key file the embedded default keeps in DATA_DIR when `SECRETS_KEY` is not set. */
export const SECRETS_KEY_FILE_NAME = 'secrets.key';

/** Thrown when a sealed secret cannot be opened: another key, or the ciphertext was altered. */
export class SecretBoxError extends Error {
  override readonly name = 'SecretBoxError';
}

/**
 * Encrypts webhook signing secrets at rest with AES-256-GCM under the server key: a database dump alone
 * does not reveal them. Sealed text is `v1.<base64(iv | tag | ciphertext)>`; every seal has a fresh IV.
 */
export class SecretBox {
  readonly #key: Buffer;

  constructor(key: Uint8Array) {
    if (key.length !== KEY_BYTES) throw new RangeError(`the secrets key must be ${KEY_BYTES} bytes`);
    this.#key = Buffer.from(key);
  }

  /** Encrypts `plaintext`. */
  seal(plaintext: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `${FORMAT}.${Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64')}`;
  }

  /** Decrypts what `seal` produced; throws SecretBoxError if it was sealed under another key or altered. */
  open(sealed: string): string {
    const [format, encoded] = sealed.split('.', 2);
    const raw = Buffer.from(encoded ?? '', 'base64');
    if (format !== FORMAT || raw.length < IV_BYTES + TAG_BYTES)
      throw new SecretBoxError('not a sealed secret');
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, raw.subarray(0, IV_BYTES));
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString(
        'utf8',
      );
    } catch (cause) {
      throw new SecretBoxError('the secret does not open under this key (was SECRETS_KEY changed?)', {
        cause,
      });
    }
  }
}

/**
 * The server key: `SECRETS_KEY` (base64 of 32 bytes) when configured, else `DATA_DIR/secrets.key`,
 * generated on first start with owner-only permissions (0600), and set back to 0600 if others could read it.
 */
export async function loadSecretsKey(options: {
  secretsKey: string | undefined;
  dataDir: string;
}): Promise<Buffer> {
  if (options.secretsKey !== undefined) return Buffer.from(options.secretsKey, 'base64');
  await mkdir(options.dataDir, { recursive: true });
  const file = join(options.dataDir, SECRETS_KEY_FILE_NAME);
  try {
    // `wx` fails if the file exists, so two processes starting together never overwrite each other's key.
    await writeFile(file, `${randomBytes(KEY_BYTES).toString('base64')}\n`, { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const { mode } = await stat(file);
  if ((mode & 0o077) !== 0) {
    // A key readable by others protects nothing; tighten it rather than refuse to start.
    await chmod(file, 0o600);
  }
  const key = Buffer.from((await readFile(file, 'utf8')).trim(), 'base64');
  if (key.length !== KEY_BYTES) throw new Error(`${file} does not hold the base64 of ${KEY_BYTES} bytes`);
  return key;
}
