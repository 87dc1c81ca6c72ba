import type { components, ScoreResponse } from '@scenario-scoring/api-types';
import {
  type VerifiedCheckpoint,
  verifyCheckpoint,
  verifyConsistency,
  verifyInclusion,
} from '@scenario-scoring/client';
import { cidOfBytes } from '@scenario-scoring/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unpackRecord } from '../src/storage/record-codec.js';
import { openStorage } from '../src/storage/storage.js';
import { BuiltServer, databaseEnv, requireBuiltServer } from './support/built-server.js';
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from './support/test-databases.js';

type Schemas = components['schemas'];
const SCORINGS = 400;
/** The first key's tenant's log, under the default LOG_ORIGIN the built servers run with. */
const DEFAULT_TENANT_ORIGIN = 'localhost/scenario-scoring/default';

beforeAll(() => requireBuiltServer());

/**
 * The sequencer under kill -9, and on PostgreSQL two instances sequencing one database at once: indexes stay
 * dense and unique, every checkpoint seen is consistent with every earlier one, and every record a scoring
 * acknowledged ends in the tree.
 */
for (const kind of DATABASE_KINDS) {
  const instances = kind === 'postgres' ? 2 : 1;
  describe(`the log sequencer killed mid-sequencing, ${instances} instance(s) (${kind})`, () => {
    let database: TestDatabase;
    let env: Record<string, string>;
    beforeAll(async () => {
      database = await createTestDatabase(kind);
      // Every pair of checkpoints is proved below, faster than a key's budget allows (a proof costs 3): the
      // rate limit is not what this test is about.
      env = { ...databaseEnv(database), LOG_CHECKPOINT_INTERVAL: '10ms', RATE_LIMIT_PER_SECOND: '0' };
    });
    afterAll(() => database.dispose());

    it('keeps indexes dense, checkpoints consistent, and every acknowledged record in the tree', async () => {
      const servers = Array.from({ length: instances }, () => new BuiltServer(env));
      try {
        const urls = await Promise.all(servers.map((server) => server.baseUrl()));
        const key = servers.map((server) => server.firstKey()).find((found) => found !== undefined) as string;
        const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
        const verifierKey = (
          (await (await fetch(`${urls[0]}/log/verifier-key`)).json()) as Schemas['LogVerifierKey']
        ).verifier_key;
        const notes = new Set<string>();
        const acknowledged: string[] = [];
        let polling = true;
        const poller = (async () => {
          while (polling) {
            for (const url of urls) {
              const response = await fetch(`${url}/v1/log/checkpoint`, { headers }).catch(() => undefined);
              if (response?.ok) notes.add(((await response.json()) as Schemas['LogCheckpoint']).note);
            }
            await new Promise((resolve) => setTimeout(resolve, 15));
          }
        })();
        const score = async (i: number) => {
          const url = urls[i % urls.length] as string;
          const body = {
            subject: `seq-crash-${i}`,
            context: { jurisdiction: 'DE', on_time_ratio: (i % 97) / 100 },
          };
          const response = await fetch(`${url}/v1/scoring/score`, {
            method: 'POST',
            headers,
            body: JSON.stringify(body),
          }).catch(() => undefined);
          // Only what was answered 200 was acknowledged; a request cut by the kill may or may not be logged.
          if (response?.ok) acknowledged.push(((await response.json()) as ScoreResponse).log_cid);
        };
        for (let i = 0; i < SCORINGS / 2; i += 10)
          await Promise.all(Array.from({ length: 10 }, (_, j) => score(i + j)));
        servers[0]?.kill('SIGKILL');
        await servers[0]?.exited;
        servers[0] = new BuiltServer(env);
        urls[0] = await servers[0].baseUrl();
        for (let i = SCORINGS / 2; i < SCORINGS; i += 10)
          await Promise.all(Array.from({ length: 10 }, (_, j) => score(i + j)));

        // Every acknowledged record gets its leaf within a few intervals, in the newest checkpoint.
        const deadline = Date.now() + 20_000;
        let latest: VerifiedCheckpoint | undefined;
        while (Date.now() < deadline) {
          const response = await fetch(`${urls[0]}/v1/log/checkpoint`, { headers });
          latest = await verifyCheckpoint(
            ((await response.json()) as Schemas['LogCheckpoint']).note,
            verifierKey,
            { origin: DEFAULT_TENANT_ORIGIN },
          );
          if (latest.treeSize >= acknowledged.length) break;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        polling = false;
        await poller;
        if (!latest) throw new Error('no checkpoint');
        notes.add(latest.note);
        expect(acknowledged.length).toBeGreaterThan(SCORINGS * 0.9);

        const storage = await openStorage(database.options);
        try {
          const rows = await storage.db
            .selectFrom('log_records')
            .leftJoin('log_leaves', (join) =>
              join
                .onRef('log_leaves.tenant_id', '=', 'log_records.tenant_id')
                .onRef('log_leaves.cid', '=', 'log_records.cid'),
            )
            .select(['log_records.cid', 'log_records.bytes', 'log_leaves.leaf_index'])
            .execute();
          // Every record is a leaf (none left queued), and no leaf is without its record.
          expect(rows.every((row) => row.leaf_index !== null)).toBe(true);
          expect(await storage.db.selectFrom('log_leaf_queue').selectAll().execute()).toEqual([]);
          const leaves = await storage.db
            .selectFrom('log_leaves')
            .select((eb) => eb.fn.countAll().as('count'))
            .executeTakeFirstOrThrow();
          expect(Number(leaves.count)).toBe(rows.length);
          const indexes = rows.map((row) => Number(row.leaf_index)).sort((a, b) => a - b);
          expect(indexes).toEqual(Array.from({ length: rows.length }, (_, i) => i));
          expect(latest.treeSize).toBe(rows.length);
          const bytesOf = new Map(rows.map((row) => [row.cid, unpackRecord(row.bytes)]));
          for (const cid of acknowledged) {
            const bytes = bytesOf.get(cid);
            expect(bytes && cidOfBytes(bytes), cid).toBe(cid);
            const response = await fetch(
              `${urls[0]}/v1/log/proofs/inclusion/${cid}?tree_size=${latest.treeSize}`,
              { headers },
            );
            await verifyInclusion(
              bytes as Uint8Array,
              (await response.json()) as Schemas['InclusionProof'],
              latest,
            );
          }
        } finally {
          await storage.close();
        }

        const checkpoints = (
          await Promise.all(
            [...notes].map((note) => verifyCheckpoint(note, verifierKey, { origin: DEFAULT_TENANT_ORIGIN })),
          )
        ).sort((a, b) => a.treeSize - b.treeSize);
        expect(checkpoints.length).toBeGreaterThan(3);
        // Consecutive pairs, and each with the first: consistency composes, so every earlier one is covered.
        for (const [i, newer] of checkpoints.entries()) {
          for (const older of i === 0 ? [] : ([checkpoints[i - 1], checkpoints[0]] as VerifiedCheckpoint[])) {
            if (older.treeSize === newer.treeSize) {
              await verifyConsistency(older, newer, []);
              continue;
            }
            const response = await fetch(
              `${urls[0]}/v1/log/proofs/consistency?from=${older.treeSize}&to=${newer.treeSize}`,
              { headers },
            );
            expect(response.status).toBe(200);
            await verifyConsistency(older, newer, (await response.json()) as Schemas['ConsistencyProof']);
          }
        }
      } finally {
        await Promise.all(servers.map((server) => server.stop('SIGKILL').catch(() => undefined)));
      }
    }, 90_000);
  });
}
