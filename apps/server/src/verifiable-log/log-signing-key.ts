import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The key file the server keeps in DATA_DIR when `LOG_SIGNING_KEY` is not set. */
export const LOG_SIGNING_KEY_FILE_NAME = 'log-signing.key';
/** Bytes of an Ed25519 private key seed. */
const SEED_BYTES = 32;

/**
 * The log's private key seed: `LOG_SIGNING_KEY` (base64 of the 32-byte Ed25519 seed) when configured, else
 * `DATA_DIR/log-signing.key`, generated on first start with owner-only permissions (0600).
 */
export async function loadLogSigningKey(options: {
  signingKey: string | undefined;
  dataDir: string;
}): Promise<Buffer> {
  if (options.signingKey !== undefined) return decodeSeed(options.signingKey, 'LOG_SIGNING_KEY');
  await mkdir(options.dataDir, { recursive: true });
  const file = join(options.dataDir, LOG_SIGNING_KEY_FILE_NAME);
  try {
    // `wx` fails if the file exists, so two processes starting together never replace each other's key.
    await writeFile(file, `${randomBytes(SEED_BYTES).toString('base64')}\n`, { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  if (((await stat(file)).mode & 0o077) !== 0) await chmod(file, 0o600);
  return decodeSeed((await readFile(file, 'utf8')).trim(), file);
}

function decodeSeed(text: string, source: string): Buffer {
  const seed = Buffer.from(text, 'base64');
  if (seed.length !== SEED_BYTES)
    throw new Error(`${source} does not hold the base64 of a ${SEED_BYTES}-byte Ed25519 key`);
  return seed;
}
