import type { components } from './api-types.js';
import { createClient } from './client-factory.js';
import {
  checkRecord,
  fromBase64,
  type LoadedPolicy,
  loadPolicy,
  NoteError,
  openNote,
  parseCheckpoint,
  recordHash,
  sha256,
  verifyCheckpoint as verifyWithPolicy,
} from './generated/tlog/index.js';
import {
  asLogProofError,
  LogProofError,
  type VerifiedCheckpoint,
  verifyCheckpoint,
  verifyConsistency,
  verifyInclusion,
} from './log-proof-verifier.js';
import { computeLogCid } from './log-record-verifier.js';

/** What an audit checks: the log at `baseUrl` for the tenant of `apiKey`, against the pinned key. */
export interface LogAuditOptions {
  baseUrl: string;
  apiKey: string;
  /** The verifier key pinned out of band (`<name>+<id>+<key>`). */
  verifierKey: string;
  /**
   * The origin line the checkpoints must carry (`<LOG_ORIGIN>/<tenant>`), pinned like the key: every
   * tenant's log is signed by the one key, so the key alone would accept another tenant's checkpoint.
   */
  origin: string;
  /** CIDs whose records must be in the log, unaltered. */
  cids?: readonly string[];
  /** The checkpoint note accepted last time, if any. */
  previousNote?: string;
  /**
   * A C2SP tlog-policy (the log's key, the witnesses' keys, the quorum): when given, the audit also checks
   * the root log — the latest root checkpoint is signed by the log's key and cosigned by a quorum, your
   * checkpoint in it is yours and consistent with the latest, its inclusion proof holds, and the root
   * checkpoint is consistent with the one accepted last time (`previousRootNote`).
   */
  policy?: string;
  /** The root checkpoint note accepted last time, if any (with `policy`). */
  previousRootNote?: string;
  /**
   * How long to keep asking when the latest root checkpoint is not cosigned by a quorum yet (a server in
   * LOG_WITNESS_MODE=fail-open serves a new root checkpoint before its witnesses answered): asked again
   * every second until then. 5 s when absent; 0 fails at once.
   */
  quorumWaitMs?: number;
  /** The fetch to use, as createClient takes it; defaults to the global one. */
  fetch?: (request: Request) => Promise<Response>;
}

/** What an audit found: `failures` is empty when every check held; `note` is the checkpoint to keep then. */
export interface LogAuditResult {
  failures: string[];
  checkpoint?: VerifiedCheckpoint;
  previous?: VerifiedCheckpoint;
  /** With `policy`: the cosigned root checkpoint that holds your checkpoint, and the witnesses that cosigned it. */
  root?: { checkpoint: VerifiedCheckpoint; witnesses: string[] };
}

/**
 * Audits a tenant's log once, as a monitor run from cron does: verifies the latest checkpoint's signature
 * with the pinned key and its origin line with the pinned origin, proves it consistent with the one accepted last time (the log only grew), and
 * proves each given CID's record (its exact bytes) in it. Never throws for what the log does wrong: each
 * failure is a line of `failures`.
 */
export async function auditLog(options: LogAuditOptions): Promise<LogAuditResult> {
  const client = createClient({
    baseUrl: options.baseUrl,
    apiKey: options.apiKey,
    ...(options.fetch && { fetch: options.fetch }),
  });
  const failures: string[] = [];
  // An answer that is not JSON (or none at all) is a failure of the log, reported as the others are.
  const latestResponse = await client
    .GET('/v1/log/checkpoint')
    .catch((error: unknown) => new LogProofError(messageOf(error)));
  if (latestResponse instanceof LogProofError) {
    return { failures: [`latest checkpoint: ${latestResponse.message}`] };
  }
  if (!latestResponse.data) {
    return {
      failures: [`latest checkpoint: ${describeHttp(latestResponse.response, latestResponse.error)}`],
    };
  }
  let checkpoint: VerifiedCheckpoint;
  try {
    checkpoint = await verifyCheckpoint(latestResponse.data.note, options.verifierKey, {
      origin: options.origin,
    });
  } catch (error) {
    return { failures: [`latest checkpoint: ${messageOf(error)}`] };
  }

  let previous: VerifiedCheckpoint | undefined;
  if (options.previousNote !== undefined) {
    try {
      previous = await verifyCheckpoint(options.previousNote, options.verifierKey, {
        origin: options.origin,
      });
      await proveGrowth(client, previous, checkpoint);
    } catch (error) {
      failures.push(messageOf(error));
    }
  }

  for (const cid of options.cids ?? []) {
    try {
      await proveRecord(client, cid, checkpoint);
    } catch (error) {
      failures.push(`${cid}: ${messageOf(error)}`);
    }
  }
  let root: LogAuditResult['root'];
  if (options.policy !== undefined) {
    try {
      root = await proveInRoot(client, await loadPolicy(options.policy), options, checkpoint);
    } catch (error) {
      failures.push(`root log: ${messageOf(error)}`);
    }
  }
  return { failures, checkpoint, ...(previous && { previous }), ...(root && { root }) };
}

/**
 * The root log's part of an audit: the latest root checkpoint (policy: signature and quorum), the
 * tenant's checkpoint in it (signed, its origin, consistent with `latest`), the inclusion proof, and the
 * root's growth since the one accepted last time.
 */
async function proveInRoot(
  client: Client,
  policy: LoadedPolicy,
  options: LogAuditOptions,
  latest: VerifiedCheckpoint,
): Promise<NonNullable<LogAuditResult['root']>> {
  const waitUntil = Date.now() + (options.quorumWaitMs ?? 5000);
  let data: RootInclusion;
  let opened: Awaited<ReturnType<typeof verifyWithPolicy>>;
  for (;;) {
    const answer = await client.GET('/v1/log/root/proofs/inclusion');
    if (!answer.data)
      throw new LogProofError(`inclusion in the root: ${describeHttp(answer.response, answer.error)}`);
    data = answer.data;
    try {
      opened = await verifyWithPolicy(policy, data.root_checkpoint.note);
      break;
    } catch (error) {
      // Not cosigned by a quorum yet: the witnesses may not have answered this new root checkpoint.
      const short = error instanceof NoteError && /do not satisfy the quorum/.test(error.message);
      if (!short || Date.now() >= waitUntil)
        throw error instanceof NoteError ? new LogProofError(error.message) : error;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
  const root: VerifiedCheckpoint = {
    origin: opened.origin,
    treeSize: opened.treeSize,
    rootHash: opened.rootHash,
    note: data.root_checkpoint.note,
  };
  const logKey = policy.logs.get(root.origin);
  if (!logKey) throw new LogProofError(`the policy has no log key for ${root.origin}`);
  const note = data.tenant_checkpoint.note;
  const parsed = parseCheckpoint((await asLogProofError(() => openNote(note, [logKey]))).text);
  if (parsed.origin !== options.origin) {
    throw new LogProofError(`the checkpoint in the root is for log ${parsed.origin}, not ${options.origin}`);
  }
  const tenant: VerifiedCheckpoint = { ...parsed, note };
  await proveGrowth(client, tenant, latest);
  const leaf = await recordHash(await sha256(new TextEncoder().encode(note)));
  // A hash that is not base64 is an empty one, which the proof check refuses.
  const path = data.inclusion_path.map((hash) => fromBase64(hash) ?? new Uint8Array(0));
  await asLogProofError(() => checkRecord(path, root.treeSize, root.rootHash, data.leaf_index, leaf));
  if (options.previousRootNote !== undefined) {
    const previous = await asLogProofError(() =>
      verifyWithPolicy(policy, options.previousRootNote as string),
    );
    const older: VerifiedCheckpoint = { ...previous, note: options.previousRootNote };
    if (root.treeSize < older.treeSize) {
      throw new LogProofError(`the root log shrank from ${older.treeSize} to ${root.treeSize} leaves`);
    }
    if (root.treeSize === older.treeSize) await verifyConsistency(older, root, []);
    else {
      const proof = await client.GET('/log/root/proofs/consistency', {
        params: { query: { from: older.treeSize, to: root.treeSize } },
      });
      if (!proof.data)
        throw new LogProofError(`root consistency: ${describeHttp(proof.response, proof.error)}`);
      await verifyConsistency(older, root, proof.data);
    }
  }
  return { checkpoint: root, witnesses: [...opened.witnessed].sort() };
}

type Client = ReturnType<typeof createClient>;
/** What `GET /v1/log/root/proofs/inclusion` answers. */
type RootInclusion = components['schemas']['RootInclusionProof'];

async function proveGrowth(
  client: Client,
  older: VerifiedCheckpoint,
  newer: VerifiedCheckpoint,
): Promise<void> {
  if (newer.treeSize <= older.treeSize) {
    // Same size, same root (verifyConsistency checks it); a smaller tree is a rewritten log.
    if (newer.treeSize < older.treeSize) {
      throw new LogProofError(`the log shrank from ${older.treeSize} to ${newer.treeSize} leaves`);
    }
    await verifyConsistency(older, newer, []);
    return;
  }
  const { data, error, response } = await client.GET('/v1/log/proofs/consistency', {
    params: { query: { from: older.treeSize, to: newer.treeSize } },
  });
  if (!data) {
    throw new LogProofError(
      `consistency ${older.treeSize} → ${newer.treeSize}: ${describeHttp(response, error)}`,
    );
  }
  await verifyConsistency(older, newer, data);
}

async function proveRecord(client: Client, cid: string, checkpoint: VerifiedCheckpoint): Promise<void> {
  const record = await client.GET('/v1/logs/{cid}', { params: { path: { cid } }, parseAs: 'arrayBuffer' });
  if (!record.data) throw new LogProofError(`record: ${describeHttp(record.response, record.error)}`);
  const bytes = new Uint8Array(record.data);
  const computed = await computeLogCid(bytes);
  const proof = await client.GET('/v1/log/proofs/inclusion/{cid}', {
    params: { path: { cid }, query: { tree_size: checkpoint.treeSize } },
  });
  if (!proof.data) throw new LogProofError(`inclusion: ${describeHttp(proof.response, proof.error)}`);
  if (computed !== cid) {
    throw new LogProofError(
      `leaf ${proof.data.leaf_index}: the record served hashes to ${computed}, not to its CID`,
    );
  }
  await verifyInclusion(bytes, proof.data, checkpoint);
}

function describeHttp(response: Response, error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  return `HTTP ${response.status}${typeof code === 'string' ? ` ${code}` : ''}`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
