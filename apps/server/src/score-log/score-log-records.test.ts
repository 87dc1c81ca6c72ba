import { randomBytes } from 'node:crypto';
import type { components, ScoreResponse } from '@scenario-scoring/api-types';
import { verifyCheckpoint, verifyInclusion } from '@scenario-scoring/client';
import {
  buildLogRecord,
  buildLogRecordV2,
  canonicalBytes,
  effectivePolicy,
  scoreScorecard2,
} from '@scenario-scoring/engine';
import { NoteSigner, recordHash } from '@scenario-scoring/tlog';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { TEST_LOG_ORIGIN, testSequencer } from '../../test/support/log-fixtures.js';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer } from '../../test/support/test-server.js';

type Schemas = components['schemas'];

const REQUEST = {
  subject: 'applicant-4417',
  context: { jurisdiction: 'DE', on_time_ratio: 0.9, utilization: 0.4, history_months: 60 },
};
const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');

forEachDatabase('score-log/2: every scoring its own record and leaf', ({ storage }) => {
  const signer = new NoteSigner('test-log', randomBytes(32));
  let server: TestServer;
  let key: string;
  /** The three scorings of REQUEST: the answer, the time window it was asked in, the record served. */
  const scorings: { body: ScoreResponse; before: string; after: string; bytes: Uint8Array }[] = [];
  let leaves: string[];
  let checkpoint: Awaited<ReturnType<typeof verifyCheckpoint>>;

  beforeAll(async () => {
    server = await startTestServer({ storage: storage(), logSigner: signer });
    ({ key } = await testFeatures(storage()).keys.create('records-alice'));
    for (let n = 0; n < 3; n++) {
      const before = new Date().toISOString();
      const body = (await (
        await server.request('/v1/scoring/score', { key, body: REQUEST })
      ).json()) as ScoreResponse;
      const after = new Date().toISOString();
      const log = await server.request(`/v1/logs/${body.log_cid}`, { key });
      scorings.push({ body, before, after, bytes: new Uint8Array(await log.arrayBuffer()) });
      await new Promise((resolve) => setTimeout(resolve, 3)); // three distinct milliseconds
    }
    await testSequencer(storage(), signer).sequencer.sequenceOnce();
    const tile = (await (await server.request('/v1/log/tiles/0/0', { key })).json()) as Schemas['LogTile'];
    leaves = tile.hashes;
    const latest = (await (
      await server.request('/v1/log/checkpoint', { key })
    ).json()) as Schemas['LogCheckpoint'];
    checkpoint = await verifyCheckpoint(latest.note, await signer.verifierKey(), {
      origin: `${TEST_LOG_ORIGIN}/records-alice`,
    });
  });
  afterAll(() => server.close());

  it('when the same request is scored three times, then it makes three records, three CIDs and three times', () => {
    const records = scorings.map(({ bytes }) => JSON.parse(new TextDecoder().decode(bytes)));
    expect(new Set(scorings.map(({ body }) => body.log_cid)).size).toBe(3);
    expect(new Set(records.map((record) => record.scored_at)).size).toBe(3);
    expect(new Set(records.map((record) => record.salt)).size).toBe(3);
    for (const [n, record] of records.entries()) {
      const { body, before, after } = scorings[n] as (typeof scorings)[number];
      expect(record).toMatchObject({ schema: 'score-log/2', kind: 'score', request_id: body.id, ...REQUEST });
      expect(record.result).toEqual(body.result);
      expect(record.scored_at >= before && record.scored_at <= after, record.scored_at).toBe(true);
    }
  });

  it('when they are sequenced, then they are three leaves, each proved in the signed tree', async () => {
    expect(checkpoint.treeSize).toBe(3);
    expect(leaves).toHaveLength(3);
    const own = await Promise.all(scorings.map(async ({ bytes }) => base64(await recordHash(bytes))));
    expect(new Set(leaves)).toEqual(new Set(own));
    for (const { body, bytes } of scorings) {
      const response = await server.request(`/v1/log/proofs/inclusion/${body.log_cid}`, { key });
      await verifyInclusion(bytes, (await response.json()) as Schemas['InclusionProof'], checkpoint);
    }
  });

  it('when someone guesses a record without its salt, then its leaf hash is in no tile', async () => {
    const policy = effectivePolicy(REQUEST.context.jurisdiction);
    const result = scoreScorecard2(REQUEST.context, policy);
    const guesses = [
      // The score-log/1 form: a pure function of the input and output, which anyone could recompute.
      canonicalBytes(buildLogRecord({ policy_version: policy.policy_version, ...REQUEST, result })),
      // The score-log/2 form with everything right (even the request id and time) but the salt.
      ...scorings.map(({ bytes }) => {
        const record = JSON.parse(new TextDecoder().decode(bytes));
        return canonicalBytes(
          buildLogRecordV2({
            identity: { kind: 'score', request_id: record.request_id },
            scored_at: record.scored_at,
            salt: randomBytes(32).toString('base64url'),
            model_version: record.model_version,
            policy_id: record.policy_id,
            policy_version: record.policy_version,
            ...REQUEST,
            result,
          }),
        );
      }),
    ];
    for (const guess of guesses) expect(leaves).not.toContain(base64(await recordHash(guess)));
    // The honest record, rebuilt with its own salt, is the leaf: the guesses fail for the salt alone.
    const first = JSON.parse(new TextDecoder().decode(scorings[0]?.bytes));
    const rebuilt = canonicalBytes(
      buildLogRecordV2({
        identity: { kind: 'score', request_id: first.request_id },
        scored_at: first.scored_at,
        salt: first.salt,
        model_version: first.model_version,
        policy_id: first.policy_id,
        policy_version: first.policy_version,
        ...REQUEST,
        result,
      }),
    );
    expect(leaves).toContain(base64(await recordHash(rebuilt)));
  });
});
