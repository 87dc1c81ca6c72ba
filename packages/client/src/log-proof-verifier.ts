/**
 * Verifies the server's verifiable log with WebCrypto only (Node 22+, browsers, Deno), through the
 * verifiable-log package (packages/tlog, copied into this package at build time): C2SP signed-note Ed25519
 * signatures of C2SP tlog-checkpoints, and RFC 9162 §2.1.3.2 / §2.1.4.2 inclusion and consistency proofs.
 * Every failure throws a LogProofError saying what did not hold.
 */
import {
  CheckpointFormatError,
  checkRecord,
  checkTree,
  fromBase64,
  NoteError,
  type NoteVerifier,
  openNote,
  PolicyError,
  ProofError,
  parseCheckpoint,
  parseVerifierKey as parseNoteVerifierKey,
  recordHash,
  TlogProofFormatError,
} from './generated/tlog/index.js';

/** Thrown when a checkpoint, a key or a proof does not verify; `message` says what did not hold. */
export class LogProofError extends Error {
  override readonly name = 'LogProofError';
}

/**
 * `run()`'s value (a promise's settled in turn); what the verifiable-log package throws (a note, proof,
 * policy or format error) becomes a LogProofError with its message, after `what: ` when `what` is given,
 * so that every verifier of this package fails with one error type. Other errors pass unchanged.
 */
export function asLogProofError<T>(run: () => T, what?: string): T {
  const wrap = (error: unknown): never => {
    if (
      error instanceof NoteError ||
      error instanceof ProofError ||
      error instanceof PolicyError ||
      error instanceof TlogProofFormatError ||
      error instanceof CheckpointFormatError
    ) {
      throw new LogProofError(what === undefined ? error.message : `${what}: ${error.message}`);
    }
    throw error;
  };
  try {
    const value = run();
    return (value instanceof Promise ? value.catch(wrap) : value) as T;
  } catch (error) {
    return wrap(error);
  }
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

const encoder = new TextEncoder();

/** A signed-note verifier key `<name>+<key ID hex>+<base64(0x01 ‖ key)>`, parsed and checked. */
export async function parseVerifierKey(
  verifierKey: string,
): Promise<{ name: string; keyId: Uint8Array; publicKey: Uint8Array }> {
  const verifier = await noteVerifier(verifierKey);
  // The checked key: after the name and the key ID, base64(0x01 ‖ public key).
  const encoded = fromBase64(verifierKey.trim().replace(/^[^+]+\+[0-9a-f]{8}\+/, '')) ?? new Uint8Array(1);
  return { name: verifier.name, keyId: verifier.keyId, publicKey: encoded.subarray(1) };
}

/**
 * Verifies a signed checkpoint note with the pinned verifier key and the log's origin line, and returns its
 * body. The origin (`<LOG_ORIGIN>/<tenant>`, known to you, never taken from the server's answer) is
 * required: one key signs every tenant's log, so without it tenant A's genuine checkpoint would pass as
 * tenant B's. Throws when no signature line of that key verifies, when the body is not a tlog-checkpoint,
 * or when its origin differs.
 */
export async function verifyCheckpoint(
  note: string,
  verifierKey: string,
  options: { origin: string },
): Promise<VerifiedCheckpoint> {
  if (typeof options?.origin !== 'string' || options.origin === '') {
    throw new LogProofError('the origin line the checkpoint must carry is required (<LOG_ORIGIN>/<tenant>)');
  }
  const verifier = await noteVerifier(verifierKey);
  let text: string;
  try {
    ({ text } = await openNote(note, [verifier]));
  } catch (error) {
    if (!(error instanceof NoteError)) throw error;
    throw new LogProofError(
      error.reason === 'unverified'
        ? `the checkpoint has no valid signature by ${verifier.name}`
        : error.message,
    );
  }
  let checkpoint: ReturnType<typeof parseCheckpoint>;
  try {
    checkpoint = parseCheckpoint(text);
  } catch (error) {
    if (!(error instanceof CheckpointFormatError)) throw error;
    throw new LogProofError('the signed note is not a tlog-checkpoint (origin, tree size, root hash)');
  }
  if (checkpoint.origin !== options.origin) {
    throw new LogProofError(`the checkpoint is for log ${checkpoint.origin}, not ${options.origin}`);
  }
  return { ...checkpoint, note };
}

/** RFC 9162 leaf hash of record bytes: SHA-256(0x00 ‖ bytes). */
export async function logLeafHash(record: Uint8Array | string): Promise<Uint8Array> {
  return recordHash(typeof record === 'string' ? encoder.encode(record) : record);
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
  if (proof.tree_size !== checkpoint.treeSize) {
    throw new LogProofError(
      `the proof is for a tree of ${proof.tree_size}, the checkpoint of ${checkpoint.treeSize}`,
    );
  }
  const path = hashes(proof.inclusion_path);
  const leaf = await logLeafHash(record);
  await asLogProofError(() =>
    checkRecord(path, checkpoint.treeSize, checkpoint.rootHash, proof.leaf_index, leaf),
  );
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
  const path = hashes('consistency_path' in proof ? proof.consistency_path : proof);
  const fail = (why: string) =>
    new LogProofError(`checkpoints ${older.treeSize} → ${newer.treeSize} are not consistent: ${why}`);
  if (older.origin !== newer.origin) throw fail(`origins differ (${older.origin}, ${newer.origin})`);
  try {
    await checkTree(path, newer.treeSize, newer.rootHash, older.treeSize, older.rootHash);
  } catch (error) {
    if (error instanceof ProofError) throw fail(error.reason);
    throw error;
  }
}

function noteVerifier(verifierKey: string): Promise<NoteVerifier> {
  return asLogProofError(() => parseNoteVerifierKey(verifierKey));
}

/** Base64 hashes as bytes; text that is not base64 becomes an empty hash, which no check accepts. */
function hashes(encoded: readonly string[]): Uint8Array[] {
  return encoded.map((text) => fromBase64(text) ?? new Uint8Array(0));
}
