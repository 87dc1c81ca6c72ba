import { randomBytes } from 'node:crypto';
import {
  createClient,
  LogProofError,
  scoreSubject,
  verifyCheckpoint,
  verifyScoreInclusion,
} from '@scenario-scoring/client';
import { NoteSigner } from '@scenario-scoring/tlog';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { TEST_LOG_ORIGIN } from '../../test/support/log-fixtures.js';
import { forEachDatabase } from '../../test/support/test-databases.js';
import { testFeatures } from '../../test/support/test-features.js';
import { startTestServer, type TestServer, testConfig } from '../../test/support/test-server.js';
import { systemClock } from '../common/clock.js';
import { silentLogger } from '../request-logging/logger.js';
import { openStorage, type Storage } from '../storage/storage.js';
import { LogSequencer } from '../verifiable-log/log-sequencer.js';

const REQUEST = { subject: 'applicant-0001', context: { jurisdiction: 'DE', utilization: 0.4 } };
const TENANT = 'inclusion';
/** Long enough that a scoring answered at once was not waiting for a round by chance. */
const INTERVAL_MS = 300;

forEachDatabase('Prefer: log-inclusion on POST /v1/scoring/score', ({ storage, kind, database }) => {
  const signer = new NoteSigner('test-log', randomBytes(32));
  const origin = `${TEST_LOG_ORIGIN}/${TENANT}`;
  let server: TestServer;
  /** The same, in production: no response validation, so the answer is written as text (score-service.ts). */
  let production: TestServer;
  let key: string;
  let verifierKey: string;
  const sequencer = (on: Storage) =>
    new LogSequencer({
      storage: on,
      signer,
      config: { origin: TEST_LOG_ORIGIN, checkpointIntervalMs: INTERVAL_MS, maxBatch: 100_000 },
      clock: systemClock,
      logger: silentLogger,
      checkpoints: testFeatures(on).logCheckpoints,
    });
  beforeAll(async () => {
    verifierKey = await signer.verifierKey();
    server = await startTestServer({
      storage: storage(),
      logSigner: signer,
      config: {
        verifiableLog: { ...testConfig().verifiableLog, inclusionMaxWaitMs: 3000 },
      },
    });
    production = await startTestServer({
      storage: storage(),
      logSigner: signer,
      config: {
        nodeEnv: 'production',
        verifiableLog: { ...testConfig().verifiableLog, inclusionMaxWaitMs: 3000 },
      },
    });
    ({ key } = await testFeatures(storage()).keys.create(TENANT));
  });
  afterAll(async () => {
    await server.close();
    await production.close();
  });
  const client = () => createClient({ baseUrl: server.url, apiKey: key });

  it('without the preference, answers at once as always: no proof, no Preference-Applied', async () => {
    const { data, response } = await scoreSubject(client(), REQUEST);
    expect(response.status).toBe(200);
    expect(response.headers.get('preference-applied')).toBeNull();
    expect(data).not.toHaveProperty('log_inclusion');
  });

  it('with it, waits for the sequencer to sign and answers the checkpoint and the proof, which the client verifies', async () => {
    const log = sequencer(storage());
    log.start();
    try {
      const started = performance.now();
      const { data, response } = await scoreSubject(client(), REQUEST, { logInclusion: { waitSeconds: 10 } });
      const waitedMs = performance.now() - started;
      expect(response.status).toBe(200);
      expect(response.headers.get('preference-applied')).toBe('log-inclusion');
      expect(data?.log_inclusion).toMatchObject({ log_cid: data?.log_cid, checkpoint: { origin } });
      // Woken by the sequencer's commit, not by a poll or the end of the (capped) wait.
      expect(waitedMs).toBeLessThan(2 * INTERVAL_MS + 1000);
      const checkpoint = await verifyScoreInclusion(client(), data as NonNullable<typeof data>, {
        verifierKey,
        origin,
      });
      expect(checkpoint.treeSize).toBe(data?.log_inclusion?.tree_size);
      // Another tenant's origin refuses the same genuine proof.
      await expect(
        verifyScoreInclusion(client(), data as NonNullable<typeof data>, {
          verifierKey,
          origin: `${TEST_LOG_ORIGIN}/other`,
        }),
      ).rejects.toThrow(LogProofError);
      expect(testFeatures(storage()).logCheckpoints.waitingTenants).toBe(0);
    } finally {
      await log.stop();
    }
  });

  it('in production, the answer with its proof is written as text: what JSON.stringify writes, log_inclusion last, and it verifies', async () => {
    const log = sequencer(storage());
    log.start();
    try {
      const response = await production.request('/v1/scoring/score', {
        key,
        body: REQUEST,
        headers: { prefer: 'log-inclusion, wait=10' },
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('preference-applied')).toBe('log-inclusion');
      const bytes = Buffer.from(await response.arrayBuffer());
      expect(Number(response.headers.get('content-length'))).toBe(bytes.length);
      const text = bytes.toString('utf8');
      const data = JSON.parse(text);
      expect(text).toBe(JSON.stringify(data));
      expect(Object.keys(data).at(-1)).toBe('log_inclusion');
      const checkpoint = await verifyScoreInclusion(client(), data, { verifierKey, origin });
      expect(checkpoint.treeSize).toBe(data.log_inclusion.tree_size);
    } finally {
      await log.stop();
    }
  });

  it('answers without the proof and without Preference-Applied when the wait runs out (wait=0, or the server cap)', async () => {
    // No sequencer runs: the record is never signed in time.
    const { data, response } = await scoreSubject(client(), REQUEST, { logInclusion: { waitSeconds: 0 } });
    expect(response.status).toBe(200);
    expect(response.headers.get('preference-applied')).toBeNull();
    expect(data).not.toHaveProperty('log_inclusion');
    await expect(
      verifyScoreInclusion(client(), data as NonNullable<typeof data>, { verifierKey, origin }),
    ).rejects.toThrow('the answer carries no log_inclusion');

    const started = performance.now();
    const capped = await server.request('/v1/scoring/score', {
      key,
      body: REQUEST,
      headers: { Prefer: 'log-inclusion, wait=600' },
    });
    const waitedMs = performance.now() - started;
    expect(capped.status).toBe(200);
    expect(capped.headers.get('preference-applied')).toBeNull();
    // LOG_INCLUSION_MAX_WAIT (3 s here) bounds a wait of 600 s.
    expect(waitedMs).toBeGreaterThanOrEqual(2900);
    expect(waitedMs).toBeLessThan(6000);
    expect(testFeatures(storage()).logCheckpoints.waitingTenants).toBe(0);
  });

  it('when a tenant has as many scorings waiting as it may, then its next gets the usual answer at once, while another tenant still waits', async () => {
    const capped = await startTestServer({
      storage: storage(),
      logSigner: signer,
      config: {
        verifiableLog: { ...testConfig().verifiableLog, inclusionMaxWaitMs: 3000, inclusionMaxWaiters: 2 },
      },
    });
    try {
      const { key: otherKey } = await testFeatures(storage()).keys.create('inclusion-other');
      // No sequencer runs: every waiter waits its whole 1.5 s.
      const ask = (apiKey: string) => {
        const started = performance.now();
        return capped
          .request('/v1/scoring/score', {
            key: apiKey,
            body: REQUEST,
            headers: { Prefer: 'log-inclusion, wait=1.5' },
          })
          .then((answer) => ({ answer, ms: performance.now() - started }));
      };
      const waiting = [ask(key), ask(key)];
      await new Promise((resolve) => setTimeout(resolve, 200));
      const [third, other] = await Promise.all([ask(key), ask(otherKey)]);
      expect(third.answer.status).toBe(200);
      expect(third.answer.headers.get('preference-applied')).toBeNull();
      expect(third.ms).toBeLessThan(1000);
      expect(other.answer.status).toBe(200);
      expect(other.ms).toBeGreaterThanOrEqual(1400);
      for (const { answer, ms } of await Promise.all(waiting)) {
        expect(answer.status).toBe(200);
        expect(ms).toBeGreaterThanOrEqual(1400);
      }
    } finally {
      await capped.close();
    }
  });

  if (kind === 'postgres') {
    it('is woken by a poll when another instance signs (the in-process signal only hears its own)', async () => {
      const other = await openStorage(database().options);
      const log = sequencer(other);
      log.start();
      try {
        const { data, response } = await scoreSubject(client(), REQUEST, { logInclusion: true });
        expect(response.headers.get('preference-applied')).toBe('log-inclusion');
        const checkpoint = await verifyCheckpoint(
          data?.log_inclusion?.checkpoint.note as string,
          verifierKey,
          { origin },
        );
        expect(checkpoint.treeSize).toBeGreaterThan(data?.log_inclusion?.leaf_index as number);
      } finally {
        await log.stop();
        await testFeatures(other).close();
        await other.close();
      }
    });
  }
});
