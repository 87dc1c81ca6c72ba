/**
 * Verifies an offline proof file (`GET /v1/logs/{cid}/proof-file`) with nothing but keys: a C2SP
 * tlog-proof of a tenant checkpoint in a root checkpoint cosigned by witnesses, whose `extra` is the
 * tlog-proof of the record in that tenant checkpoint, whose own `extra` is the record's bytes.
 */

import {
  checkRecord,
  loadPolicy,
  openNote,
  parseCheckpoint,
  parseTlogProof,
  recordHash,
  sha256,
  type TlogProof,
  verifyCheckpoint as verifyWithPolicy,
} from './generated/tlog/index.js';
import { asLogProofError, LogProofError, type VerifiedCheckpoint } from './log-proof-verifier.js';
import { computeLogCid } from './log-record-verifier.js';

/** What a proof file proved: the record, its CID and leaf, the tenant checkpoint and the cosigned root. */
export interface VerifiedProofFile {
  cid: string;
  record: Uint8Array;
  leafIndex: number;
  checkpoint: VerifiedCheckpoint;
  rootCheckpoint: VerifiedCheckpoint;
  /** The policy names of the witnesses whose cosignatures verified. */
  witnesses: string[];
}

/**
 * Verifies the proof file `text` against the C2SP tlog-policy `policyText` (the log's key on its `log`
 * line, whose name is the root origin `<LOG_ORIGIN>`; the witnesses' keys and the quorum): the root
 * checkpoint is signed by the log key and cosigned by a quorum; the tenant checkpoint is signed by the
 * same key with an origin `<LOG_ORIGIN>/<tenant>` (exactly `origin` when given); the record's bytes are its
 * leaf; SHA-256 of the tenant checkpoint's note is the root leaf. `cid`, when given, must be the record's
 * CID. Throws a LogProofError saying what did not hold.
 */
export async function verifyProofFile(
  text: string,
  policyText: string,
  options: { cid?: string; origin?: string } = {},
): Promise<VerifiedProofFile> {
  const policy = await guard('policy', () => loadPolicy(policyText));
  const outer = guard('proof file', () => parseTlogProof(text));
  const root = await guard('root checkpoint', () => verifyWithPolicy(policy, outer.checkpoint));
  if (!outer.extra) throw new LogProofError('the proof file has no tenant proof (extra line)');
  const inner: TlogProof = guard('tenant proof', () => parseTlogProof(new TextDecoder().decode(outer.extra)));
  if (!inner.extra) throw new LogProofError('the tenant proof has no record (extra line)');
  const logKey = policy.logs.get(root.origin);
  if (!logKey) throw new LogProofError(`no policy log key for ${root.origin}`);
  const opened = await guard('tenant checkpoint', () => openNote(inner.checkpoint, [logKey]));
  const tenant = guard('tenant checkpoint', () => parseCheckpoint(opened.text));
  if (
    options.origin !== undefined
      ? tenant.origin !== options.origin
      : !tenant.origin.startsWith(`${root.origin}/`)
  ) {
    throw new LogProofError(
      `the tenant checkpoint is for log ${tenant.origin}, not ${options.origin ?? `${root.origin}/<tenant>`}`,
    );
  }
  const record = inner.extra;
  const cid = await computeLogCid(record);
  if (options.cid !== undefined && cid !== options.cid) {
    throw new LogProofError(`the record in the proof file is ${cid}, not ${options.cid}`);
  }
  await guard(`record ${cid}`, () =>
    recordHash(record).then((leaf) =>
      checkRecord(inner.path, tenant.treeSize, tenant.rootHash, inner.index, leaf),
    ),
  );
  const rootLeaf = await recordHash(await sha256(new TextEncoder().encode(inner.checkpoint)));
  await guard('tenant checkpoint in the root log', () =>
    checkRecord(outer.path, root.treeSize, root.rootHash, outer.index, rootLeaf),
  );
  return {
    cid,
    record,
    leafIndex: inner.index,
    checkpoint: { ...tenant, note: inner.checkpoint },
    rootCheckpoint: {
      origin: root.origin,
      treeSize: root.treeSize,
      rootHash: root.rootHash,
      note: outer.checkpoint,
    },
    witnesses: [...root.witnessed].sort(),
  };
}

/** `run()`'s value; what the verifiable-log package throws becomes a LogProofError after `what: `. */
const guard = <T>(what: string, run: () => T): T => asLogProofError(run, what);
