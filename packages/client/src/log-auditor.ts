import { createClient } from './client-factory.js';
import {
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
  fetch?: typeof fetch;
}

/** What an audit found: `failures` is empty when every check held; `note` is the checkpoint to keep then. */
export interface LogAuditResult {
  failures: string[];
  checkpoint?: VerifiedCheckpoint;
  previous?: VerifiedCheckpoint;
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
  const latestResponse = await client.GET('/v1/log/checkpoint');
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
  return { failures, checkpoint, ...(previous && { previous }) };
}

type Client = ReturnType<typeof createClient>;

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
