import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { components } from '@scenario-scoring/api-types';
import { LogProofError, verifyProofFile } from '@scenario-scoring/client';
import {
  formatCheckpoint,
  formatTlogProof,
  loadPolicy,
  NoteSigner,
  parseTlogProof,
  recordHash,
  signNote,
  verifyCheckpoint,
} from '@scenario-scoring/tlog';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { logRecords, TEST_LOG_ORIGIN, testRecord, testSequencer } from '../../test/support/log-fixtures.js';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';
import { startTestWitnesses } from '../../test/support/test-witnesses.js';
import { systemClock } from '../common/clock.js';
import { silentLogger } from '../request-logging/logger.js';
import { RootLog } from './root-log.js';

type Schemas = components['schemas'];
const AUDIT = new URL('../../../../packages/client/bin/scenario-scoring-audit.js', import.meta.url).pathname;

forEachDatabase('the root log over HTTP', ({ storage }) => {
  const signer = new NoteSigner(TEST_LOG_ORIGIN, randomBytes(32));
  let server: TestServer;
  let witnesses: Awaited<ReturnType<typeof startTestWitnesses>>;
  let alice: string;
  const dir = mkdtempSync(join(tmpdir(), 'root-log-'));
  const records = Array.from({ length: 6 }, (_, n) => testRecord('root-http-alice', n));
  const bobRecords = Array.from({ length: 3 }, (_, n) => testRecord('root-http-bob', n));

  beforeAll(async () => {
    witnesses = await startTestWitnesses(signer, TEST_LOG_ORIGIN);
    const policyPath = join(dir, 'witnesses.policy');
    writeFileSync(policyPath, witnesses.policyText);
    server = await startTestServer({
      storage: storage(),
      logSigner: signer,
      config: {
        verifiableLog: {
          ...(await import('../../test/support/test-server.js')).testConfig().verifiableLog,
          origin: TEST_LOG_ORIGIN,
          keyName: TEST_LOG_ORIGIN,
          witnessPolicy: {
            path: policyPath,
            text: witnesses.policyText,
            policy: (await loadPolicy(witnesses.policyText)).policy,
          },
          witnessMode: 'fail-closed',
        },
      },
    });
    ({ key: alice } = await testFeatures(storage()).keys.create('root-http-alice'));
    const { sequencer } = testSequencer(storage(), signer);
    const root = new RootLog({
      storage: storage(),
      signer,
      config: { origin: TEST_LOG_ORIGIN, maxBatch: 1000, witnessTimeoutMs: 5000 },
      policyText: witnesses.policyText,
      clock: systemClock,
      logger: silentLogger,
    });
    for (const batch of [records.slice(0, 3), [...records.slice(3), ...bobRecords]]) {
      await logRecords(storage(), batch);
      await sequencer.sequenceOnce();
      await root.sequenceOnce();
    }
    root.start();
    try {
      const deadline = Date.now() + 10_000;
      while ((await server.request('/log/root/checkpoint')).status !== 200) {
        if (Date.now() > deadline) throw new Error('no quorum-cosigned root checkpoint within 10 s');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      await root.stop();
    }
  }, 30_000);
  afterAll(async () => {
    await server?.close();
    await witnesses?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves the cosigned root checkpoint and root consistency proofs without an API key, naming no tenant', async () => {
    const response = await server.request('/log/root/checkpoint');
    const latest = (await response.json()) as Schemas['RootCheckpoint'];
    expect(latest.tree_size).toBe(3);
    expect(latest.cosigners.sort()).toEqual(['witness.test/w1', 'witness.test/w2']);
    const policy = await loadPolicy(witnesses.policyText);
    expect((await verifyCheckpoint(policy, latest.note, TEST_LOG_ORIGIN)).witnessed.size).toBe(2);
    const consistency = await server.request('/log/root/proofs/consistency?from=1&to=3');
    expect(consistency.status).toBe(200);
    const text = JSON.stringify([latest, await consistency.json()]);
    expect(text).not.toContain('root-http-alice');
    expect(text).not.toContain('root-http-bob');
    expect((await server.request('/log/root/proofs/consistency?from=2&to=9')).status).toBe(404);
  });

  it("proves the tenant's checkpoint in the root log, only for its own key", async () => {
    const response = await server.request('/v1/log/root/proofs/inclusion', { key: alice });
    expect(response.status).toBe(200);
    const proof = (await response.json()) as Schemas['RootInclusionProof'];
    expect(proof.tenant_checkpoint.origin).toBe(`${TEST_LOG_ORIGIN}/root-http-alice`);
    expect(proof.tenant_checkpoint.tree_size).toBe(6);
    expect(proof.root_checkpoint.tree_size).toBe(3);
    expect((await server.request('/v1/log/root/proofs/inclusion')).status).toBe(401);
    expect((await server.request('/v1/log/root/proofs/inclusion?tree_size=5', { key: alice })).status).toBe(
      404,
    );
  });

  it('serves an offline proof file that the auditor verifies with nothing but the policy', async () => {
    const record = records[1] as (typeof records)[number];
    const response = await server.request(`/v1/logs/${record.cid}/proof-file`, { key: alice });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-disposition')).toBe(
      `attachment; filename="${record.cid}.tlog-proof"`,
    );
    const file = await response.text();
    expect(file.startsWith('c2sp.org/tlog-proof@v1\nextra ')).toBe(true);
    const verified = await verifyProofFile(file, witnesses.policyText, {
      cid: record.cid,
      origin: `${TEST_LOG_ORIGIN}/root-http-alice`,
    });
    expect(verified).toMatchObject({ leafIndex: expect.any(Number), witnesses: ['w1', 'w2'] });
    expect(Buffer.from(verified.record)).toEqual(Buffer.from(record.bytes));
    // The command, offline.
    const proofPath = join(dir, `${record.cid}.tlog-proof`);
    writeFileSync(proofPath, file);
    const policyPath = join(dir, 'witnesses.policy');
    const { stdout } = await promisify(execFile)(process.execPath, [
      AUDIT,
      '--proof-file',
      proofPath,
      '--policy',
      policyPath,
      '--cid',
      record.cid,
      '--origin',
      `${TEST_LOG_ORIGIN}/root-http-alice`,
    ]);
    expect(stdout).toMatch(/^OK .* cosigned by w1, w2\n$/);
    // Another record's CID, a record altered in the file, another tenant's origin: refused.
    await expect(
      verifyProofFile(file, witnesses.policyText, { cid: (records[2] as typeof record).cid }),
    ).rejects.toThrow(LogProofError);
    await expect(
      verifyProofFile(file, witnesses.policyText, { origin: `${TEST_LOG_ORIGIN}/root-http-bob` }),
    ).rejects.toThrow(/not test/);
    const outer = parseTlogProof(file);
    const inner = parseTlogProof(new TextDecoder().decode(outer.extra));
    const altered = formatTlogProof({
      ...outer,
      extra: new TextEncoder().encode(
        formatTlogProof({ ...inner, extra: new TextEncoder().encode('{"forged":true}') }),
      ),
    });
    await expect(verifyProofFile(altered, witnesses.policyText)).rejects.toThrow(/record/);
    expect(
      (await server.request(`/v1/logs/${(bobRecords[0] as typeof record).cid}/proof-file`, { key: alice }))
        .status,
    ).toBe(404);
  });

  it('a forked root checkpoint, refused by the witnesses, fails the auditor without quorum', async () => {
    const record = records[0] as (typeof records)[number];
    const file = await (await server.request(`/v1/logs/${record.cid}/proof-file`, { key: alice })).text();
    const outer = parseTlogProof(file);
    const size = Number(outer.checkpoint.split('\n')[1]);
    // The log key signs another root of the same size (its database edited): the witnesses refuse it.
    const forked = await signNote(
      formatCheckpoint({
        origin: TEST_LOG_ORIGIN,
        treeSize: size,
        rootHash: await recordHash(new Uint8Array([1])),
      }),
      signer,
    );
    for (const w of witnesses.witnesses) {
      const refused = await fetch(`${w.url}/add-checkpoint`, {
        method: 'POST',
        body: `old ${size}\n\n${forked}`,
      });
      expect(refused.status).toBe(422);
    }
    // A proof file built on the fork has only the log's signature: the auditor refuses it for the quorum.
    const forkedFile = formatTlogProof({ ...outer, checkpoint: forked });
    await expect(verifyProofFile(forkedFile, witnesses.policyText)).rejects.toThrow(
      /do not satisfy the quorum/,
    );
    const forkedPath = join(dir, 'forked.tlog-proof');
    writeFileSync(forkedPath, forkedFile);
    const audit = promisify(execFile)(process.execPath, [
      AUDIT,
      '--proof-file',
      forkedPath,
      '--policy',
      join(dir, 'witnesses.policy'),
      '--origin',
      `${TEST_LOG_ORIGIN}/root-http-alice`,
    ]);
    await expect(audit).rejects.toMatchObject({ code: 1, stderr: expect.stringMatching(/^FAIL .*quorum/) });
  });
});
