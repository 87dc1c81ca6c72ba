import {
  createHash,
  createPrivateKey,
  createPublicKey,
  type KeyObject,
  randomBytes,
  sign,
} from 'node:crypto';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The key file the server keeps in DATA_DIR when `LOG_SIGNING_KEY` is not set. */
export const LOG_SIGNING_KEY_FILE_NAME = 'log-signing.key';
const SEED_BYTES = 32;
const ED25519_ALGORITHM = 0x01;
/** DER prefix of a PKCS #8 Ed25519 private key, followed by its 32-byte seed (RFC 8410). */
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/**
 * Signs checkpoints as a C2SP signed-note with Ed25519: the signature line is
 * `— <name> base64(key ID ‖ signature)`, the key ID the first 4 bytes of SHA-256(name ‖ 0x0A ‖ 0x01 ‖ public key).
 */
export class CheckpointSigner {
  readonly name: string;
  readonly #privateKey: KeyObject;
  readonly #keyId: Buffer;
  /** `<name>+<key ID hex>+<base64(0x01 ‖ public key)>`, what Go's note.NewVerifier parses. */
  readonly verifierKey: string;

  constructor(name: string, seed: Uint8Array) {
    if (seed.length !== SEED_BYTES) throw new RangeError(`an Ed25519 private key is ${SEED_BYTES} bytes`);
    if (!/^[^\s+]+$/.test(name)) throw new RangeError('a key name has no spaces and no "+"');
    this.name = name;
    this.#privateKey = createPrivateKey({
      key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]),
      format: 'der',
      type: 'pkcs8',
    });
    const publicKey = createPublicKey(this.#privateKey).export({ format: 'jwk' }).x as string;
    const encodedKey = Buffer.concat([Buffer.from([ED25519_ALGORITHM]), Buffer.from(publicKey, 'base64url')]);
    this.#keyId = createHash('sha256').update(`${name}\n`).update(encodedKey).digest().subarray(0, 4);
    this.verifierKey = `${name}+${this.#keyId.toString('hex')}+${encodedKey.toString('base64')}`;
  }

  /** The signed note of `body` (text ending in a newline): body, blank line, one signature line. */
  signNote(body: string): string {
    if (!body.endsWith('\n')) throw new RangeError('a note body ends with a newline');
    const signature = sign(null, Buffer.from(body, 'utf8'), this.#privateKey);
    return `${body}\n\u2014 ${this.name} ${Buffer.concat([this.#keyId, signature]).toString('base64')}\n`;
  }
}

/** The C2SP tlog-checkpoint body: origin, tree size, base64 root hash, each on its own line. */
export function checkpointBody(origin: string, treeSize: number, rootHash: Uint8Array): string {
  return `${origin}\n${treeSize}\n${Buffer.from(rootHash).toString('base64')}\n`;
}

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
