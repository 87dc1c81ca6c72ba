/**
 * Verifies the server's verifiable log with WebCrypto only (Node 22+, browsers, Deno): C2SP signed-note
 * Ed25519 signatures of C2SP tlog-checkpoints, and RFC 9162 §2.1.3.2 / §2.1.4.2 inclusion and consistency
 * proofs. Every failure throws a LogProofError saying what did not hold.
 */

/** Thrown when a checkpoint, a key or a proof does not verify; `message` says what did not hold. */
export class LogProofError extends Error {
  override readonly name = 'LogProofError';
}

/** A checkpoint whose signature verified: what its body says. */
export interface VerifiedCheckpoint {
  origin: string;
  treeSize: number;
  rootHash: Uint8Array;
  /** The signed note as received. */
  note: string;
}

/** An inclusion proof as `GET /v1/log/proofs/inclusion/{cid}` returns it (only these fields are read). */
export interface InclusionProofFields {
  leaf_index: number;
  tree_size: number;
  inclusion_path: readonly string[];
}

const ED25519 = 0x01;
const encoder = new TextEncoder();

/** A signed-note verifier key `<name>+<key ID hex>+<base64(0x01 ‖ key)>`, parsed and checked. */
export async function parseVerifierKey(
  verifierKey: string,
): Promise<{ name: string; keyId: Uint8Array; publicKey: Uint8Array }> {
  // The base64 key may hold '+' itself: name and key ID come first, the rest is the key.
  const [, name = '', idHex = '', encoded = ''] =
    /^([^+\s]+)\+([0-9a-f]{8})\+(\S+)$/.exec(verifierKey.trim()) ?? [];
  const key = fromBase64(encoded);
  if (!name || key.length !== 33 || key[0] !== ED25519) {
    throw new LogProofError(`not an Ed25519 signed-note verifier key: ${JSON.stringify(verifierKey)}`);
  }
  const keyId = await computeKeyId(name, key);
  if (toHex(keyId) !== idHex)
    throw new LogProofError(`the verifier key's ID ${idHex} does not match its key`);
  return { name, keyId, publicKey: key.subarray(1) };
}

/**
 * Verifies a signed checkpoint note with the pinned verifier key and returns its body. Throws when no
 * signature line of that key verifies, when the body is not a tlog-checkpoint, or when `origin` is given
 * and differs.
 */
export async function verifyCheckpoint(
  note: string,
  verifierKey: string,
  options: { origin?: string } = {},
): Promise<VerifiedCheckpoint> {
  const key = await parseVerifierKey(verifierKey);
  const split = note.lastIndexOf('\n\n');
  if (!note.endsWith('\n') || split < 0)
    throw new LogProofError('not a signed note: no blank line before its signatures');
  const body = note.slice(0, split + 1);
  const publicKey = await crypto.subtle.importKey(
    'raw',
    key.publicKey as BufferSource,
    { name: 'Ed25519' },
    false,
    ['verify'],
  );
  let verified = false;
  for (const line of note.slice(split + 2, -1).split('\n')) {
    const match = /^\u2014 (\S+) (\S+)$/.exec(line);
    if (!match || match[1] !== key.name) continue;
    const signature = fromBase64(match[2] as string);
    if (signature.length !== 68 || toHex(signature.subarray(0, 4)) !== toHex(key.keyId)) continue;
    if (
      await crypto.subtle.verify(
        { name: 'Ed25519' },
        publicKey,
        signature.subarray(4) as BufferSource,
        encoder.encode(body),
      )
    ) {
      verified = true;
      break;
    }
  }
  if (!verified) throw new LogProofError(`the checkpoint has no valid signature by ${key.name}`);
  const [origin, size, root] = body.split('\n');
  const rootHash = fromBase64(root ?? '');
  if (!origin || !/^(0|[1-9][0-9]*)$/.test(size ?? '') || rootHash.length !== 32) {
    throw new LogProofError('the signed note is not a tlog-checkpoint (origin, tree size, root hash)');
  }
  if (options.origin !== undefined && origin !== options.origin) {
    throw new LogProofError(`the checkpoint is for log ${origin}, not ${options.origin}`);
  }
  return { origin, treeSize: Number(size), rootHash, note };
}

/** RFC 9162 leaf hash of record bytes: SHA-256(0x00 ‖ bytes). */
export async function logLeafHash(record: Uint8Array | string): Promise<Uint8Array> {
  const bytes = typeof record === 'string' ? encoder.encode(record) : record;
  return sha256(concat(new Uint8Array([0]), bytes));
}

/**
 * Verifies that `record` (its exact bytes) is leaf `proof.leaf_index` of the tree of `checkpoint` (verified
 * with {@link verifyCheckpoint}). Throws a LogProofError naming the leaf index when it does not.
 */
export async function verifyInclusion(
  record: Uint8Array | string,
  proof: InclusionProofFields,
  checkpoint: VerifiedCheckpoint,
): Promise<void> {
  const index = proof.leaf_index;
  if (proof.tree_size !== checkpoint.treeSize) {
    throw new LogProofError(
      `the proof is for a tree of ${proof.tree_size}, the checkpoint of ${checkpoint.treeSize}`,
    );
  }
  if (!(index >= 0 && index < checkpoint.treeSize))
    throw new LogProofError(`leaf ${index} is not in a tree of ${checkpoint.treeSize}`);
  let fn = index;
  let sn = checkpoint.treeSize - 1;
  let r = await logLeafHash(record);
  for (const sibling of proof.inclusion_path.map(fromBase64)) {
    if (sn === 0) throw new LogProofError(`leaf ${index}: the inclusion path is too long`);
    if (fn % 2 === 1 || fn === sn) {
      r = await node(sibling, r);
      if (fn % 2 === 0) while (fn % 2 === 0 && fn !== 0) [fn, sn] = [half(fn), half(sn)];
    } else {
      r = await node(r, sibling);
    }
    [fn, sn] = [half(fn), half(sn)];
  }
  if (sn !== 0 || !equal(r, checkpoint.rootHash)) {
    throw new LogProofError(
      `leaf ${index}: the record is not in the tree of ${checkpoint.treeSize} (root mismatch)`,
    );
  }
}

/**
 * Verifies that the tree of `newer` holds the tree of `older` unchanged (both verified with
 * {@link verifyCheckpoint}, of one origin), given the consistency path. Throws a LogProofError otherwise.
 */
export async function verifyConsistency(
  older: VerifiedCheckpoint,
  newer: VerifiedCheckpoint,
  proof: readonly string[] | { consistency_path: readonly string[] },
): Promise<void> {
  const path = ('consistency_path' in proof ? proof.consistency_path : proof).map(fromBase64);
  const [first, second] = [older.treeSize, newer.treeSize];
  const fail = (why: string) =>
    new LogProofError(`checkpoints ${first} → ${second} are not consistent: ${why}`);
  if (older.origin !== newer.origin) throw fail(`origins differ (${older.origin}, ${newer.origin})`);
  if (first > second) throw fail('the newer tree is smaller');
  if (first === second) {
    if (path.length !== 0 || !equal(older.rootHash, newer.rootHash)) throw fail('same size, different roots');
    return;
  }
  if (first === 0) return;
  if (Number.isInteger(Math.log2(first))) path.unshift(older.rootHash);
  if (path.length === 0) throw fail('empty proof');
  let fn = first - 1;
  let sn = second - 1;
  while (fn % 2 === 1) [fn, sn] = [half(fn), half(sn)];
  let fr = path[0] as Uint8Array;
  let sr = fr;
  for (const c of path.slice(1)) {
    if (sn === 0) throw fail('the proof is too long');
    if (fn % 2 === 1 || fn === sn) {
      fr = await node(c, fr);
      sr = await node(c, sr);
      if (fn % 2 === 0) while (fn % 2 === 0 && fn !== 0) [fn, sn] = [half(fn), half(sn)];
    } else {
      sr = await node(sr, c);
    }
    [fn, sn] = [half(fn), half(sn)];
  }
  if (sn !== 0 || !equal(fr, older.rootHash) || !equal(sr, newer.rootHash)) throw fail('root mismatch');
}

async function node(left: Uint8Array, right: Uint8Array): Promise<Uint8Array> {
  return sha256(concat(new Uint8Array([1]), left, right));
}

async function sha256(bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as BufferSource));
}

async function computeKeyId(name: string, key: Uint8Array): Promise<Uint8Array> {
  return (await sha256(concat(encoder.encode(`${name}\n`), key))).subarray(0, 4);
}

/** Halves without 32-bit bit operations, so tree sizes above 2^31 stay exact. */
function half(n: number): number {
  return Math.floor(n / 2);
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

function equal(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

function fromBase64(text: string): Uint8Array {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0) return new Uint8Array(0);
  const binary = atob(text);
  return Uint8Array.from(binary, (char) => char.charCodeAt(0));
}

function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
}
