import { fromBase64, toBase64, toHex } from './encoding.js';
import {
  base64UrlToStandard,
  computeKeyId,
  concat,
  isValidName,
  NoteError,
  type NoteSignature,
  type NoteVerifier,
  PKCS8_ED25519_PREFIX,
  PUBLIC_KEY_SIZE,
  SEED_SIZE,
  SIGNATURE_SIZE,
  splitVerifierKey,
  type TextSigner,
} from './note.js';

/** The signed-note key type byte of C2SP tlog-cosignature Ed25519 (cosignature/v1) keys. */
const COSIGNATURE_V1 = 0x04;
/** Bytes of the big-endian POSIX timestamp that starts a cosignature/v1 signature. */
const TIMESTAMP_SIZE = 8;
const encoder = new TextEncoder();

/**
 * The message a cosignature/v1 signs for `timestamp` (POSIX seconds) and the checkpoint note text `text`:
 * `cosignature/v1\ntime <timestamp>\n` followed by the whole text (C2SP tlog-cosignature, Ed25519). Throws
 * a RangeError for a timestamp that is not a non-negative safe integer, or a text of fewer than 3 lines.
 */
export function cosignedMessage(timestamp: number, text: string): Uint8Array {
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) throw new RangeError(`timestamp ${timestamp}`);
  if (text.split('\n').length < 4 || !text.endsWith('\n')) {
    throw new RangeError('a cosigned checkpoint has an origin, a size and a hash line');
  }
  return encoder.encode(`cosignature/v1\ntime ${timestamp}\n${text}`);
}

/**
 * A C2SP tlog-cosignature Ed25519 (cosignature/v1) cosigner named `name` with the 32-byte private key seed
 * `seed`. `now` gives the POSIX time in seconds each cosignature states (default: the clock). The
 * constructor checks name and seed (RangeError).
 */
export class CosignatureSigner implements TextSigner {
  readonly name: string;
  readonly #now: () => number;
  readonly #keys: Promise<{ privateKey: CryptoKey; keyId: Uint8Array; verifierKey: string }>;

  constructor(name: string, seed: Uint8Array, now: () => number = () => Math.floor(Date.now() / 1000)) {
    if (seed.length !== SEED_SIZE) throw new RangeError(`an Ed25519 private key is ${SEED_SIZE} bytes`);
    if (!isValidName(name)) throw new RangeError('a key name has no spaces and no "+"');
    this.name = name;
    this.#now = now;
    this.#keys = importCosigningKey(name, seed);
    this.#keys.catch(() => {});
  }

  /** `<name>+<key ID hex>+<base64(0x04 ‖ public key)>`: the cosigner's verifier key (vkey). */
  async verifierKey(): Promise<string> {
    return (await this.#keys).verifierKey;
  }

  /**
   * The cosignature line of the checkpoint note text `text` at the time `now` gives: key ID (0x04 type) and
   * the 8-byte big-endian timestamp followed by the Ed25519 signature of {@link cosignedMessage}.
   */
  async sign(text: string): Promise<NoteSignature> {
    return this.signAt(text, this.#now());
  }

  /** As {@link sign}, stating `timestamp` (POSIX seconds) instead of the clock's time. */
  async signAt(text: string, timestamp: number): Promise<NoteSignature> {
    const { privateKey, keyId } = await this.#keys;
    const message = cosignedMessage(timestamp, text);
    const signature = new Uint8Array(
      await crypto.subtle.sign({ name: 'Ed25519' }, privateKey, message as BufferSource),
    );
    return { name: this.name, keyId, signature: concat(encodeTimestamp(timestamp), signature) };
  }
}

/**
 * The verifier of a cosignature/v1 verifier key `<name>+<key ID hex>+<base64(0x04 ‖ key)>`; it verifies
 * cosignature lines over checkpoint note texts (use it with `openNote`). As Go's
 * `NewVerifierForCosignatureV1`, a signed-note Ed25519 key (type 0x01) is accepted and taken as the same
 * public key with the 0x04 key ID. Throws a NoteError `malformed` for anything else, or a key ID that does
 * not match.
 */
export async function parseCosignatureVerifierKey(verifierKey: string): Promise<NoteVerifier> {
  const { name, idHex, encoded } = splitVerifierKey(verifierKey);
  const key = fromBase64(encoded);
  if (
    !name ||
    !idHex ||
    key?.length !== 1 + PUBLIC_KEY_SIZE ||
    (key[0] !== COSIGNATURE_V1 && key[0] !== 0x01)
  ) {
    throw new NoteError(
      `not an Ed25519 cosignature verifier key: ${JSON.stringify(verifierKey)}`,
      'malformed',
    );
  }
  if (toHex(await computeKeyId(name, key)) !== idHex) {
    throw new NoteError(`the verifier key's ID ${idHex} does not match its key`, 'malformed');
  }
  const publicKeyBytes = key.subarray(1);
  const keyId = await computeKeyId(name, concat(Uint8Array.of(COSIGNATURE_V1), publicKeyBytes));
  const publicKey = await crypto.subtle.importKey(
    'raw',
    publicKeyBytes as BufferSource,
    { name: 'Ed25519' },
    false,
    ['verify'],
  );
  return {
    name,
    keyId,
    verify: async (message, signature) => {
      if (signature.length !== TIMESTAMP_SIZE + SIGNATURE_SIZE) return false;
      const timestamp = decodeTimestamp(signature);
      if (timestamp === undefined) return false;
      let signed: Uint8Array;
      try {
        signed = cosignedMessage(timestamp, new TextDecoder('utf-8', { fatal: true }).decode(message));
      } catch {
        return false;
      }
      return crypto.subtle.verify(
        { name: 'Ed25519' },
        publicKey,
        signature.subarray(TIMESTAMP_SIZE) as BufferSource,
        signed as BufferSource,
      );
    },
  };
}

/** The POSIX timestamp a cosignature/v1 signature (timestamp ‖ Ed25519 signature) states; undefined if none. */
export function cosignatureTimestamp(signature: NoteSignature): number | undefined {
  return signature.signature.length === TIMESTAMP_SIZE + SIGNATURE_SIZE
    ? decodeTimestamp(signature.signature)
    : undefined;
}

function encodeTimestamp(timestamp: number): Uint8Array {
  const bytes = new Uint8Array(TIMESTAMP_SIZE);
  new DataView(bytes.buffer).setBigUint64(0, BigInt(timestamp));
  return bytes;
}

function decodeTimestamp(signature: Uint8Array): number | undefined {
  const value = new DataView(signature.buffer, signature.byteOffset, TIMESTAMP_SIZE).getBigUint64(0);
  return value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : undefined;
}

async function importCosigningKey(name: string, seed: Uint8Array) {
  const privateKey = await crypto.subtle.importKey(
    'pkcs8',
    concat(PKCS8_ED25519_PREFIX, seed) as BufferSource,
    { name: 'Ed25519' },
    true,
    ['sign'],
  );
  const { x } = await crypto.subtle.exportKey('jwk', privateKey);
  const publicKey = fromBase64(base64UrlToStandard(x ?? ''));
  if (publicKey?.length !== PUBLIC_KEY_SIZE) throw new Error('WebCrypto gave no Ed25519 public key');
  const encodedKey = concat(Uint8Array.of(COSIGNATURE_V1), publicKey);
  const keyId = await computeKeyId(name, encodedKey);
  return { privateKey, keyId, verifierKey: `${name}+${toHex(keyId)}+${toBase64(encodedKey)}` };
}
