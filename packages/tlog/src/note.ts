import { fromBase64, toBase64, toHex } from './encoding.js';
import { sha256 } from './hash.js';

/** The signed-note algorithm byte of Ed25519 keys. */
const ED25519 = 0x01;
/** Bytes of an Ed25519 private key seed. */
export const SEED_SIZE = 32;
/** Bytes of an Ed25519 public key. */
export const PUBLIC_KEY_SIZE = 32;
/** Bytes of an Ed25519 signature. */
export const SIGNATURE_SIZE = 64;
/** DER prefix of a PKCS #8 Ed25519 private key, followed by its 32-byte seed (RFC 8410). */
export const PKCS8_ED25519_PREFIX = Uint8Array.of(
  0x30,
  0x2e,
  0x02,
  0x01,
  0x00,
  0x30,
  0x05,
  0x06,
  0x03,
  0x2b,
  0x65,
  0x70,
  0x04,
  0x22,
  0x04,
  0x20,
);
const encoder = new TextEncoder();

/** Thrown when a note or a verifier key is malformed (`malformed`) or no known key signed it (`unverified`). */
export class NoteError extends Error {
  override readonly name = 'NoteError';
  readonly reason: 'malformed' | 'unverified';

  constructor(message: string, reason: 'malformed' | 'unverified') {
    super(message);
    this.reason = reason;
  }
}

/** A key that checks signatures of one name: what {@link parseVerifierKey} gives. */
export interface NoteVerifier {
  readonly name: string;
  /** The signed-note key ID: the first 4 bytes of SHA-256(name ‖ 0x0A ‖ 0x01 ‖ public key). */
  readonly keyId: Uint8Array;
  /** Whether `signature` is this key's signature of `message`. */
  verify(message: Uint8Array, signature: Uint8Array): Promise<boolean>;
}

/** A signature line of a note: the signer's name, key ID and signature. */
export interface NoteSignature {
  name: string;
  keyId: Uint8Array;
  signature: Uint8Array;
}

/** A note that {@link openNote} verified: its text and the signatures of known keys that verified. */
export interface OpenedNote {
  text: string;
  signatures: NoteSignature[];
}

/**
 * A C2SP signed-note Ed25519 signer named `name` (no spaces, no '+') with the 32-byte private key seed
 * `seed`. The constructor checks both (RangeError); the key is imported into WebCrypto once, on first use.
 */
export class NoteSigner {
  readonly name: string;
  readonly #keys: Promise<{ privateKey: CryptoKey; keyId: Uint8Array; verifierKey: string }>;

  constructor(name: string, seed: Uint8Array) {
    if (seed.length !== SEED_SIZE) throw new RangeError(`an Ed25519 private key is ${SEED_SIZE} bytes`);
    if (!isValidName(name)) throw new RangeError('a key name has no spaces and no "+"');
    this.name = name;
    this.#keys = importSigningKey(name, seed);
    // Awaited by every use; not an unhandled rejection while none came yet.
    this.#keys.catch(() => {});
  }

  /** `<name>+<key ID as 8 hex digits>+<base64(0x01 ‖ public key)>`, what Go's `note.NewVerifier` parses. */
  async verifierKey(): Promise<string> {
    return (await this.#keys).verifierKey;
  }

  /** This key's signature line for `text`: its name, key ID and Ed25519 signature of the text's bytes. */
  async sign(text: string): Promise<NoteSignature> {
    const { privateKey, keyId } = await this.#keys;
    const signature = new Uint8Array(
      await crypto.subtle.sign({ name: 'Ed25519' }, privateKey, encoder.encode(text) as BufferSource),
    );
    return { name: this.name, keyId, signature };
  }
}

/** What signs a note's text: a {@link NoteSigner}, or a cosigner (cosignature.ts). */
export interface TextSigner {
  readonly name: string;
  /** This key's signature line for `text` (a note text ending in a newline). */
  sign(text: string): Promise<NoteSignature>;
}

/** The note signature line `— <name> base64(key ID ‖ signature)` of `signature`, ending in a newline. */
export function formatSignatureLine(signature: NoteSignature): string {
  return `\u2014 ${signature.name} ${toBase64(concat(signature.keyId, signature.signature))}\n`;
}

/**
 * The C2SP signed note of `text` signed by each of `signers`: the text (which must end in a newline:
 * RangeError otherwise), a blank line, and one line `— <name> base64(key ID ‖ signature)` per signer.
 */
export async function signNote(text: string, ...signers: TextSigner[]): Promise<string> {
  if (!text.endsWith('\n')) throw new RangeError('a note text ends with a newline');
  const lines = await Promise.all(
    signers.map(async (signer) => formatSignatureLine(await signer.sign(text))),
  );
  return `${text}\n${lines.join('')}`;
}

/** The most signature lines a note may have, as Go's `note.Open` allows. */
const MAX_SIGNATURES = 100;

/** Whether `text` holds a control character other than newline (U+0000-U+001F), as Go's note.Open refuses. */
function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 && code !== 0x0a) return true;
  }
  return false;
}

/** A UTF-16 surrogate without its pair: text that has no UTF-8 form. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Opens a signed note: resolves with its text and the signatures of `verifiers` that verified over it.
 * Lines by other keys are skipped. As Go's `note.Open`, throws a NoteError `malformed` when `note` is not a
 * signed note: a control character other than newline, a lone surrogate, no blank line before the
 * signatures, a signature line that is not `— <name> <base64>` (a valid name, at least 5 bytes), or more
 * than 100 signature lines (a note is small: this bounds the work a hostile one costs); and `unverified`
 * when no signature of a given verifier verifies, or when a line naming a given verifier (name and key ID)
 * holds a signature that does not verify. A signature repeated by the same key is checked once.
 */
export async function openNote(note: string, verifiers: readonly NoteVerifier[]): Promise<OpenedNote> {
  if (hasControlCharacter(note) || LONE_SURROGATE.test(note)) {
    throw new NoteError('not a signed note: a control character or an invalid character', 'malformed');
  }
  const split = note.lastIndexOf('\n\n');
  if (!note.endsWith('\n') || split < 0 || split + 2 === note.length) {
    throw new NoteError('not a signed note: no blank line before its signatures', 'malformed');
  }
  const text = note.slice(0, split + 1);
  const lines = note.slice(split + 2, -1).split('\n');
  if (lines.length > MAX_SIGNATURES) {
    throw new NoteError(`not a signed note: more than ${MAX_SIGNATURES} signature lines`, 'malformed');
  }
  const message = encoder.encode(text);
  const signatures: NoteSignature[] = [];
  const seen = new Set<string>();
  for (const line of lines) {
    const match = /^\u2014 ([^ ]+) ([^ ]+)$/.exec(line);
    const bytes = match && fromBase64(match[2] as string);
    if (!match || !isValidName(match[1] as string) || !bytes || bytes.length < 5) {
      throw new NoteError('not a signed note: a signature line is not "— <name> <base64>"', 'malformed');
    }
    const keyId = bytes.subarray(0, 4);
    const signature = bytes.subarray(4);
    const known = verifiers.filter(
      (verifier) => verifier.name === match[1] && toHex(verifier.keyId) === toHex(keyId),
    );
    if (known.length === 0) continue;
    // A key's signature repeated is checked once (Go drops repeated signatures by one verifier).
    const key = `${match[1]} ${toHex(keyId)}`;
    if (seen.has(key)) continue;
    seen.add(key);
    let verified = false;
    for (const verifier of known) {
      if (await verifier.verify(message, signature)) {
        signatures.push({ name: verifier.name, keyId, signature });
        verified = true;
        break;
      }
    }
    // As Go's note.Open: a line naming a known key whose signature fails makes the note invalid.
    if (!verified) {
      throw new NoteError(`the signature by ${match[1]} does not verify`, 'unverified');
    }
  }
  if (signatures.length === 0) {
    const names = verifiers.map((verifier) => verifier.name).join(', ');
    throw new NoteError(`the note has no valid signature by ${names}`, 'unverified');
  }
  return { text, signatures };
}

/**
 * The verifier of an Ed25519 signed-note verifier key `<name>+<key ID hex>+<base64(0x01 ‖ key)>`. Throws a
 * NoteError `malformed` when it is not one, or when its key ID is not the one its name and key give.
 */
export async function parseVerifierKey(verifierKey: string): Promise<NoteVerifier> {
  const { name, idHex, encoded } = splitVerifierKey(verifierKey);
  const key = fromBase64(encoded);
  if (!name || !idHex || key?.length !== 1 + PUBLIC_KEY_SIZE || key[0] !== ED25519) {
    throw new NoteError(
      `not an Ed25519 signed-note verifier key: ${JSON.stringify(verifierKey)}`,
      'malformed',
    );
  }
  const keyId = await computeKeyId(name, key);
  if (toHex(keyId) !== idHex) {
    throw new NoteError(`the verifier key's ID ${idHex} does not match its key`, 'malformed');
  }
  const publicKey = await crypto.subtle.importKey(
    'raw',
    key.subarray(1) as BufferSource,
    { name: 'Ed25519' },
    false,
    ['verify'],
  );
  return {
    name,
    keyId,
    verify: async (message, signature) =>
      signature.length === SIGNATURE_SIZE &&
      crypto.subtle.verify(
        { name: 'Ed25519' },
        publicKey,
        signature as BufferSource,
        message as BufferSource,
      ),
  };
}

async function importSigningKey(name: string, seed: Uint8Array) {
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
  const encodedKey = concat(Uint8Array.of(ED25519), publicKey);
  const keyId = await computeKeyId(name, encodedKey);
  return { privateKey, keyId, verifierKey: `${name}+${toHex(keyId)}+${toBase64(encodedKey)}` };
}

/** The signed-note key ID of `name` and `encodedKey` (type byte ‖ key): SHA-256(name ‖ 0x0A ‖ key)[:4]. */
export async function computeKeyId(name: string, encodedKey: Uint8Array): Promise<Uint8Array> {
  return (await sha256(concat(encoder.encode(`${name}\n`), encodedKey))).subarray(0, 4);
}

/**
 * A verifier key's parts as Go's note.NewVerifier splits them: the name up to the first '+' (held to
 * `isValidName`; empty when it fails), the key ID up to the next (8 hex digits, lower-cased; empty when not),
 * the base64 key after it (which may hold '+' itself). Spaces, tabs and line ends around the whole key are
 * dropped (a key read from a file or a variable); Go takes none.
 */
export function splitVerifierKey(verifierKey: string): { name: string; idHex: string; encoded: string } {
  const text = verifierKey.replace(/^[ \t\r\n]+|[ \t\r\n]+$/g, '');
  const first = text.indexOf('+');
  const second = first === -1 ? -1 : text.indexOf('+', first + 1);
  if (second === -1) return { name: '', idHex: '', encoded: '' };
  const name = text.slice(0, first);
  const idHex = text.slice(first + 1, second);
  return {
    name: isValidName(name) ? name : '',
    idHex: /^[0-9a-fA-F]{8}$/.test(idHex) ? idHex.toLowerCase() : '',
    encoded: text.slice(second + 1),
  };
}

/**
 * Go's `unicode.IsSpace`: the Unicode White_Space characters. Not JavaScript's `\s`, which has U+FEFF
 * (not White_Space) and lacks U+0085 (NEL, which is).
 */
const GO_SPACE_OR_PLUS = /[\t\n\v\f\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000+]/;

/**
 * Whether `name` is a valid signed-note key name, as Go's note.isValidName says: not empty, valid UTF-8
 * (no lone surrogate), no whitespace (`unicode.IsSpace`), no '+'.
 */
export function isValidName(name: string): boolean {
  return name !== '' && !GO_SPACE_OR_PLUS.test(name) && !LONE_SURROGATE.test(name);
}

/** Standard base64 of base64url `text` (as a JWK holds keys). */
export function base64UrlToStandard(text: string): string {
  const standard = text.replace(/-/g, '+').replace(/_/g, '/');
  return standard + '='.repeat((4 - (standard.length % 4)) % 4);
}

/** The bytes of `parts`, one after another. */
export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
