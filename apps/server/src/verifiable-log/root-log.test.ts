import { randomBytes } from 'node:crypto';
import {
  checkRecord,
  checkTree,
  formatCheckpoint,
  fromBase64,
  loadPolicy,
  NoteError,
  NoteSigner,
  parseVerifierKey,
  recordHash,
  signNote,
  verifyCheckpoint,
} from '@scenario-scoring/tlog';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { goVerify } from '../../test/interop/go-log-verifier.js';
import { logRecords, TEST_LOG_ORIGIN, testRecord, testSequencer } from '../../test/support/log-fixtures.js';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { startTestWitnesses } from '../../test/support/test-witnesses.js';
import { systemClock } from '../common/clock.js';
import { silentLogger } from '../request-logging/logger.js';
import { RootLog, rootLeaf, servedRootCheckpoint } from './root-log.js';
import { findRootCheckpoint, proveRootConsistency, proveRootInclusion } from './root-log-service.js';
import { rootCheckpointView, rootConsistencyProofView } from './verifiable-log-views.js';

const TENANTS = ['root-alice', 'root-bob'];
const hash = (text: string) => fromBase64(text) as Uint8Array;

forEachDatabase('the root log', ({ storage }) => {
  let tenantLog: ReturnType<typeof testSequencer>;
  let witnesses: Awaited<ReturnType<typeof startTestWitnesses>>['witnesses'];
  let closeWitnesses: () => Promise<unknown>;
  let policyText: string;
  let root: RootLog;

  beforeAll(async () => {
    tenantLog = testSequencer(storage(), new NoteSigner(TEST_LOG_ORIGIN, randomBytes(32)));
    ({
      witnesses,
      policyText,
      close: closeWitnesses,
    } = await startTestWitnesses(tenantLog.signer, TEST_LOG_ORIGIN));
    root = new RootLog({
      storage: storage(),
      signer: tenantLog.signer,
      config: { origin: TEST_LOG_ORIGIN, maxBatch: 1000, witnessTimeoutMs: 5000 },
      policyText,
      clock: systemClock,
      logger: silentLogger,
    });
  });

  afterAll(() => closeWitnesses?.());

  it('makes every signed tenant checkpoint a root leaf, in order, and signs the grown root tree', async () => {
    const db = storage().db;
    for (let round = 0; round < 3; round++) {
      for (const [t, tenant] of TENANTS.entries()) {
        await logRecords(
          storage(),
          Array.from({ length: 3 + t }, (_, i) => testRecord(tenant, round * 10 + i)),
        );
      }
      await tenantLog.sequencer.sequenceOnce();
      expect(await root.sequenceOnce()).toBe((round + 1) * TENANTS.length);
    }
    expect(await root.sequenceOnce()).toBeUndefined();
    const latest = await findRootCheckpoint(db, { policy: undefined, mode: 'fail-open' });
    expect(latest.treeSize).toBe(6);
    const logKey = await parseVerifierKey(await tenantLog.signer.verifierKey());
    const opened = await verifyCheckpoint(
      await loadPolicy(`log ${await tenantLog.signer.verifierKey()}\nquorum none\n`),
      latest.note,
      TEST_LOG_ORIGIN,
    );
    expect(opened.treeSize).toBe(6);
    expect(logKey.name).toBe(TEST_LOG_ORIGIN);
    // Every tenant checkpoint is proved in the root checkpoint, its leaf the hash of its note.
    for (const tenant of TENANTS) {
      for (const size of [3, 6, 9].map((n) => (tenant === 'root-bob' ? n + n / 3 : n))) {
        const proof = await proveRootInclusion(db, { policy: undefined, mode: 'fail-open' }, tenant, size);
        expect(proof.tenantCheckpoint.treeSize).toBe(size);
        await checkRecord(
          proof.path,
          proof.rootCheckpoint.treeSize,
          proof.rootCheckpoint.rootHash,
          proof.leafIndex,
          await recordHash(await rootLeaf(proof.tenantCheckpoint.note)),
        );
      }
    }
    const consistency = await proveRootConsistency(db, 2, 6);
    await checkTree(consistency.path, 6, consistency.to.rootHash, 2, consistency.from.rootHash);
    // Public answers name no tenant.
    const publicText = JSON.stringify([rootCheckpointView(latest), rootConsistencyProofView(consistency)]);
    for (const tenant of TENANTS) expect(publicText).not.toContain(tenant);
    await expect(db.deleteFrom('root_log_leaves').execute()).rejects.toThrow(/append-only/);
    await expect(db.updateTable('root_log_checkpoints').set({ note: 'x' }).execute()).rejects.toThrow(
      /append-only/,
    );
  });

  it('sends each root checkpoint to the witnesses, stores their cosignatures and serves a quorum-cosigned one', async () => {
    const db = storage().db;
    const policy = await loadPolicy(policyText);
    expect(await servedRootCheckpoint(db, policy, 'fail-closed')).toBeUndefined();
    const started = root;
    started.start();
    try {
      await expect
        .poll(async () => (await servedRootCheckpoint(db, policy, 'fail-closed'))?.treeSize, {
          timeout: 10_000,
        })
        .toBe(6);
      await logRecords(storage(), [testRecord('root-alice', 99)]);
      await tenantLog.sequencer.sequenceOnce();
      await expect
        .poll(async () => (await servedRootCheckpoint(db, policy, 'fail-closed'))?.treeSize, {
          timeout: 10_000,
        })
        .toBe(7);
    } finally {
      await started.stop();
    }
    const served = await findRootCheckpoint(db, { policy, mode: 'fail-closed' });
    expect(served.cosigners.sort()).toEqual(['witness.test/w1', 'witness.test/w2']);
    const verified = await verifyCheckpoint(policy, served.note, TEST_LOG_ORIGIN);
    expect([...verified.witnessed].sort()).toEqual(['w1', 'w2']);
    const inclusion = await proveRootInclusion(db, { policy, mode: 'fail-closed' }, 'root-alice');
    expect(inclusion.tenantCheckpoint.treeSize).toBe(10);
    expect(inclusion.rootCheckpoint.treeSize).toBe(7);
    // Go's sumdb/note and sumdb/tlog, with transparency-dev/formats' cosignature/v1 verifier: the cosigned
    // root checkpoint, every tenant checkpoint's root inclusion proof, and the root's growth from 6 to 7.
    const inclusions = [];
    for (const [tenant, sizes] of [
      ['root-alice', [3, 6, 9, 10]],
      ['root-bob', [4, 8, 12]],
    ] as const) {
      for (const size of sizes) {
        const proof = await proveRootInclusion(db, { policy, mode: 'fail-closed' }, tenant, size);
        inclusions.push({
          record: Buffer.from(await rootLeaf(proof.tenantCheckpoint.note)).toString('base64'),
          leaf_index: proof.leafIndex,
          tree_size: proof.rootCheckpoint.treeSize,
          path: proof.path.map((hash) => Buffer.from(hash).toString('base64')),
        });
      }
    }
    const growth = await proveRootConsistency(db, 6, 7);
    const goAnswer = await goVerify({
      verifier_key: await tenantLog.signer.verifierKey(),
      origin: TEST_LOG_ORIGIN,
      cosigner_keys: witnesses.map((w) => w.verifierKey),
      checkpoints: [growth.from.note, served.note].filter((note) => note.includes('witness.test/w2')),
      inclusions,
      consistencies: [],
    });
    expect(goAnswer).toBe('ok: 2 checkpoints, 7 inclusion proofs, 0 consistency proofs');
    expect(
      await goVerify({
        verifier_key: await tenantLog.signer.verifierKey(),
        origin: TEST_LOG_ORIGIN,
        checkpoints: [growth.from.note, growth.to.note],
        inclusions: [],
        consistencies: [
          { from: 6, to: 7, path: growth.path.map((hash) => Buffer.from(hash).toString('base64')) },
        ],
      }),
    ).toBe('ok: 2 checkpoints, 0 inclusion proofs, 1 consistency proofs');
  }, 120_000);

  it('a forked root checkpoint is refused by the witnesses, so it never gathers a quorum', async () => {
    const db = storage().db;
    const policy = await loadPolicy(policyText);
    const served = await findRootCheckpoint(db, { policy, mode: 'fail-closed' });
    // The operator's key signs another root of the same size (a database edited behind its back).
    const forkedRoot = await recordHash(new TextEncoder().encode('another history'));
    const forked = await signNote(
      formatCheckpoint({ origin: TEST_LOG_ORIGIN, treeSize: served.treeSize, rootHash: forkedRoot }),
      tenantLog.signer,
    );
    for (const w of witnesses) {
      const response = await fetch(`${w.url}/add-checkpoint`, {
        method: 'POST',
        body: `old ${served.treeSize}\n\n${forked}`,
      });
      expect(response.status).toBe(422);
    }
    // Without cosignatures the fork fails the policy; with the honest ones copied over, the signatures fail.
    await expect(verifyCheckpoint(policy, forked, TEST_LOG_ORIGIN)).rejects.toThrow(
      /do not satisfy the quorum/,
    );
    const cosignatureLines = served.note.slice(served.note.indexOf('\n\u2014 witness'));
    await expect(
      verifyCheckpoint(policy, forked + cosignatureLines.slice(1), TEST_LOG_ORIGIN),
    ).rejects.toThrow(NoteError);
    expect(hash(served.note.split('\n')[2] as string)).not.toEqual(forkedRoot);
  });
});
