import { describe, expect, it } from 'vitest';
import { jsonResponse, scriptedFetch } from '../test/scripted-fetch.js';
import {
  CosignatureSigner,
  formatCheckpoint,
  NoteSigner,
  recordHash,
  sha256,
  signNote,
} from './generated/tlog/index.js';
import { auditLog, type LogAuditOptions } from './log-auditor.js';

const API_KEY = `sk_${'a'.repeat(32)}`;

/**
 * A log of one tenant (one record) whose checkpoint is the only leaf of a root log, and that root
 * checkpoint as a server in LOG_WITNESS_MODE=fail-open serves it: first signed by the log's key alone (its
 * witness has not answered yet), then cosigned.
 */
async function witnessedLog() {
  const log = new NoteSigner('log.example', new Uint8Array(32).fill(1));
  const witness = new CosignatureSigner('witness.example', new Uint8Array(32).fill(2));
  const origin = 'log.example/acme';
  const leaf = await recordHash(new TextEncoder().encode('a record'));
  const tenantNote = await signNote(formatCheckpoint({ origin, treeSize: 1, rootHash: leaf }), log);
  // The root log's one leaf: SHA-256 of the tenant checkpoint's note, as a record.
  const rootLeaf = await recordHash(await sha256(new TextEncoder().encode(tenantNote)));
  const rootText = formatCheckpoint({ origin: 'log.example', treeSize: 1, rootHash: rootLeaf });
  const policy = [
    `log ${await log.verifierKey()}`,
    `witness w1 ${await witness.verifierKey()}`,
    'quorum w1',
    '',
  ].join('\n');
  const inclusion = (rootNote: string) =>
    jsonResponse({
      tenant_checkpoint: { note: tenantNote },
      leaf_index: 0,
      inclusion_path: [],
      root_checkpoint: { note: rootNote },
    });
  return {
    origin,
    policy,
    verifierKey: await log.verifierKey(),
    latest: () => jsonResponse({ note: tenantNote }),
    inclusion,
    uncosigned: async () => inclusion(await signNote(rootText, log)),
    cosigned: async () => inclusion(await signNote(rootText, log, witness)),
  };
}

/** Audits the fixture's log through `fetch`, as a tenant pinning its key and origin; `options` on top. */
function audit(
  fixture: Awaited<ReturnType<typeof witnessedLog>>,
  fetch: (request: Request) => Promise<Response>,
  options: Partial<LogAuditOptions> = {},
) {
  return auditLog({
    baseUrl: 'http://log.test',
    apiKey: API_KEY,
    verifierKey: fixture.verifierKey,
    origin: fixture.origin,
    fetch,
    ...options,
  });
}

describe('auditLog with a policy (the root log)', () => {
  it('asks again while the latest root checkpoint is short of its quorum, and passes once it is cosigned', async () => {
    const fixture = await witnessedLog();
    const { fetch, sent } = scriptedFetch(
      fixture.latest(),
      await fixture.uncosigned(),
      await fixture.cosigned(),
    );
    const result = await audit(fixture, fetch, { policy: fixture.policy, quorumWaitMs: 5_000 });
    expect(result.failures).toEqual([]);
    expect(result.root?.witnesses).toEqual(['w1']);
    expect(sent.map((request) => new URL(request.url).pathname)).toEqual([
      '/v1/log/checkpoint',
      '/v1/log/root/proofs/inclusion',
      '/v1/log/root/proofs/inclusion',
    ]);
  });

  it('fails for lack of quorum once the wait is over, naming it', async () => {
    const fixture = await witnessedLog();
    const { fetch, sent } = scriptedFetch(fixture.latest(), await fixture.uncosigned());
    const result = await audit(fixture, fetch, { policy: fixture.policy, quorumWaitMs: 0 });
    expect(result.failures).toHaveLength(1);
    expect(result.failures[0]).toMatch(/^root log: .*quorum/);
    expect(sent).toHaveLength(2);
  });

  it('does not wait for a root checkpoint that fails for another reason than its quorum', async () => {
    const fixture = await witnessedLog();
    // Signed by another key than the policy's log key: no wait makes it valid.
    const forged = await signNote(
      formatCheckpoint({ origin: 'log.example', treeSize: 1, rootHash: new Uint8Array(32) }),
      new NoteSigner('log.example', new Uint8Array(32).fill(9)),
    );
    const { fetch, sent } = scriptedFetch(fixture.latest(), fixture.inclusion(forged));
    const result = await audit(fixture, fetch, { policy: fixture.policy, quorumWaitMs: 5_000 });
    expect(result.failures).toHaveLength(1);
    expect(result.failures[0]).toMatch(/^root log: /);
    // Asked once: no second look at the root.
    expect(sent).toHaveLength(2);
  });

  it('reports a checkpoint answer that is not JSON as a failure, never throws', async () => {
    const fixture = await witnessedLog();
    const { fetch } = scriptedFetch(
      new Response('{not json', { status: 200, headers: { 'content-type': 'application/json' } }),
    );
    const result = await audit(fixture, fetch);
    expect(result.failures).toHaveLength(1);
    expect(result.failures[0]).toMatch(/^latest checkpoint: /);
  });
});
