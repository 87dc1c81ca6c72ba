import { randomBytes } from 'node:crypto';
import type { components, Problem } from '@scenario-scoring/api-types';
import {
  createClient,
  fetchVerifiedLogRecord,
  verifyCheckpoint,
  verifyConsistency,
  verifyInclusion,
} from '@scenario-scoring/client';
import { NoteSigner, recordHash } from '@scenario-scoring/tlog';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { logRecords, TEST_LOG_ORIGIN, testRecord, testSequencer } from '../../test/support/log-fixtures.js';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';

type Schemas = components['schemas'];

forEachDatabase('the verifiable log over HTTP', ({ storage }) => {
  const signer = new NoteSigner('test-log', randomBytes(32));
  let server: TestServer;
  let alice: string;
  let bob: string;
  const records = Array.from({ length: 5 }, (_, n) => testRecord('http-alice', n));
  beforeAll(async () => {
    server = await startTestServer({ storage: storage(), logSigner: signer });
    ({ key: alice } = await testFeatures(storage()).keys.create('http-alice'));
    ({ key: bob } = await testFeatures(storage()).keys.create('http-bob'));
    const { sequencer } = testSequencer(storage(), signer);
    await logRecords(storage(), records.slice(0, 2));
    await sequencer.sequenceOnce();
    await logRecords(storage(), records.slice(2, 4));
    await sequencer.sequenceOnce();
    await logRecords(storage(), records.slice(4));
  });
  afterAll(() => server.close());

  it('serves the verifier key without an API key', async () => {
    const response = await server.request('/log/verifier-key');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ verifier_key: await signer.verifierKey(), key_name: 'test-log' });
  });

  it('serves checkpoints and proofs that the client verifies', async () => {
    const latest = (await (
      await server.request('/v1/log/checkpoint', { key: alice })
    ).json()) as Schemas['LogCheckpoint'];
    const origin = { origin: `${TEST_LOG_ORIGIN}/http-alice` };
    const checkpoint = await verifyCheckpoint(latest.note, await signer.verifierKey(), origin);
    expect(checkpoint.treeSize).toBe(4);
    for (const record of records.slice(0, 4)) {
      const response = await server.request(`/v1/log/proofs/inclusion/${record.cid}?tree_size=4`, {
        key: alice,
      });
      expect(response.status).toBe(200);
      await verifyInclusion(record.bytes, (await response.json()) as Schemas['InclusionProof'], checkpoint);
    }
    const response = await server.request('/v1/log/proofs/consistency?from=2&to=4', { key: alice });
    const proof = (await response.json()) as Schemas['ConsistencyProof'];
    const older = await verifyCheckpoint(proof.from_checkpoint.note, await signer.verifierKey(), origin);
    await verifyConsistency(older, checkpoint, proof);
  });

  it("proves a record with fetchVerifiedLogRecord against the pinned origin, and refuses the same genuine proof as another tenant's", async () => {
    const client = createClient({ baseUrl: server.url, apiKey: alice });
    const verifierKey = await signer.verifierKey();
    const cid = records[0]?.cid as string;
    const mine = await fetchVerifiedLogRecord(client, cid, {
      verifierKey,
      origin: `${TEST_LOG_ORIGIN}/http-alice`,
    });
    expect(mine.data?.inclusion?.checkpoint).toMatchObject({
      origin: `${TEST_LOG_ORIGIN}/http-alice`,
      treeSize: 4,
    });
    const asBob = await fetchVerifiedLogRecord(client, cid, {
      verifierKey,
      origin: `${TEST_LOG_ORIGIN}/http-bob`,
    });
    expect(asBob.error).toEqual({
      code: 'log_proof_failed',
      cid,
      detail: `the checkpoint is for log ${TEST_LOG_ORIGIN}/http-alice, not ${TEST_LOG_ORIGIN}/http-bob`,
    });
  });

  it("serves the tiles, whose leaf hashes are the records' and whose root is the checkpoint's", async () => {
    const response = await server.request('/v1/log/tiles/0/0', { key: alice });
    expect(response.status).toBe(200);
    const tile = (await response.json()) as Schemas['LogTile'];
    expect(tile).toMatchObject({ level: 0, index: 0, width: 4 });
    const leaves = await Promise.all(
      records
        .slice(0, 4)
        .map(async (record) => Buffer.from(await recordHash(record.bytes)).toString('base64')),
    );
    expect(new Set(tile.hashes)).toEqual(new Set(leaves));
    const two = (await (
      await server.request('/v1/log/tiles/0/0?width=2', { key: alice })
    ).json()) as Schemas['LogTile'];
    expect(two.hashes).toEqual(tile.hashes.slice(0, 2));
    expect((await server.request('/v1/log/tiles/0/0?width=5', { key: alice })).status).toBe(404);
    expect((await server.request('/v1/log/tiles/0/0', { key: bob })).status).toBe(404);
  });

  it('answers a record not sequenced yet with 409 and Retry-After', async () => {
    const response = await server.request(`/v1/log/proofs/inclusion/${records[4]?.cid}`, { key: alice });
    expect(response.status).toBe(409);
    expect(response.headers.get('retry-after')).toBe('1');
    expect(((await response.json()) as Problem).code).toBe('log_record_not_sequenced');
  });

  it("keeps tenants apart: another tenant's CID has no proof (404), and an empty log no checkpoint", async () => {
    const proof = await server.request(`/v1/log/proofs/inclusion/${records[0]?.cid}`, { key: bob });
    expect(proof.status).toBe(404);
    expect(((await proof.json()) as Problem).code).toBe('not_found');
    const checkpoint = await server.request('/v1/log/checkpoint', { key: bob });
    expect(checkpoint.status).toBe(404);
    expect(((await checkpoint.json()) as Problem).code).toBe('checkpoint_not_found');
  });

  it('refuses sizes that are not checkpoints, or in the wrong order', async () => {
    const missing = await server.request('/v1/log/proofs/consistency?from=1&to=4', { key: alice });
    expect(missing.status).toBe(404);
    // Past the tree: the missing checkpoint answers, not the tiles the proof could not find.
    const beyond = await server.request('/v1/log/proofs/consistency?from=2&to=999999', { key: alice });
    expect(beyond.status).toBe(404);
    expect(((await beyond.json()) as Problem).code).toBe('checkpoint_not_found');
    const swapped = await server.request('/v1/log/proofs/consistency?from=4&to=2', { key: alice });
    expect(((await swapped.json()) as Problem).code).toBe('tree_size_too_small');
    const invalid = await server.request('/v1/log/proofs/consistency?from=0&to=x', { key: alice });
    expect(((await invalid.json()) as Problem).code).toBe('validation_failed');
  });
});
