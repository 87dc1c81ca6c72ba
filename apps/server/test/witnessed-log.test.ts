import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { components, ScoreResponse } from '@scenario-scoring/api-types';
import { verifyProofFile } from '@scenario-scoring/client';
import { startNodeProcess, type WatchedProcess } from '@scenario-scoring/testkit';
import {
  CosignatureSigner,
  checkTree,
  fromBase64,
  loadPolicy,
  NoteSigner,
  verifyCheckpoint,
} from '@scenario-scoring/tlog';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BuiltServer, databaseEnv, requireBuiltServer } from './support/built-server.js';
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from './support/test-databases.js';

type Schemas = components['schemas'];
const WITNESS_MAIN = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'witness', 'dist', 'main.js');
const ORIGIN = 'witnessed.test/scenario-scoring';
/** The client package's built auditor, run as `npx scenario-scoring-audit` runs it. */
const AUDITOR = fileURLToPath(
  new URL('../../../packages/client/dist/bin/scenario-scoring-audit.js', import.meta.url),
);

/** Runs the auditor polling `url` with the root log's checks (`--policy`); its exit code and output. */
function audit(url: string, apiKey: string, args: string[]) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [AUDITOR, '--url', url, ...args],
      { env: { SCENARIO_SCORING_API_KEY: apiKey } },
      (error, stdout, stderr) =>
        resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

beforeAll(() => {
  requireBuiltServer();
  if (!existsSync(WITNESS_MAIN))
    throw new Error(`${WITNESS_MAIN} is missing: run "npx turbo run build" first`);
});

/** A scenario-scoring-witness process (the built apps/witness) of the log key `logKey`, on a free port. */
async function startWitness(name: string, logKey: string, dataDir: string) {
  const process_: WatchedProcess = startNodeProcess(
    [WITNESS_MAIN, '--name', name, '--log', logKey, '--data-dir', dataDir, '--port', '0'],
    {
      cwd: dirname(WITNESS_MAIN),
      env: { PATH: process.env.PATH ?? '' },
      keepChars: Number.POSITIVE_INFINITY,
    },
  );
  const [line] = await process_.waitForOutput(/\{"listening".*\}/, 20_000);
  const { listening, verifier_key } = JSON.parse(line) as { listening: string; verifier_key: string };
  return { process: process_, url: listening, verifierKey: verifier_key };
}

/**
 * Two witness processes against the built server: every root checkpoint is cosigned by both (the policy's
 * quorum, served fail-closed), a record's offline proof file verifies with nothing but the policy, and
 * after the server is killed with SIGKILL and restarted, its root log goes on consistently: the witnesses,
 * which refuse any rollback or fork, keep cosigning.
 */
for (const kind of DATABASE_KINDS) {
  describe(`the root log witnessed by two witness processes (${kind})`, () => {
    let database: TestDatabase;
    const dir = mkdtempSync(join(tmpdir(), 'witnessed-'));
    beforeAll(async () => {
      database = await createTestDatabase(kind);
    });
    afterAll(async () => {
      await database.dispose();
      rmSync(dir, { recursive: true, force: true });
    });

    it('cosigns every root checkpoint, serves verifiable proof files, and survives kill -9', async () => {
      const seed = randomBytes(32);
      const logKey = await new NoteSigner(ORIGIN, seed).verifierKey();
      const witnesses = await Promise.all(
        [1, 2].map((i) => startWitness(`witness.test/p${i}`, logKey, join(dir, `witness-${i}`))),
      );
      const policyText = [
        `log ${logKey}`,
        ...witnesses.map((w, i) => `witness p${i + 1} ${w.verifierKey} ${w.url}`),
        'group both all p1 p2',
        'quorum both',
        '',
      ].join('\n');
      const policyPath = join(dir, 'witnesses.policy');
      writeFileSync(policyPath, policyText);
      const policy = await loadPolicy(policyText);
      const env = {
        ...databaseEnv(database),
        LOG_SIGNING_KEY: seed.toString('base64'),
        LOG_ORIGIN: ORIGIN,
        LOG_WITNESS_POLICY: policyPath,
        LOG_WITNESS_MODE: 'fail-closed',
        LOG_CHECKPOINT_INTERVAL: '50ms',
        RATE_LIMIT_PER_SECOND: '0',
      };
      let server = new BuiltServer(env);
      try {
        let url = await server.baseUrl();
        const key = server.firstKey() as string;
        const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
        const score = async (i: number) => {
          const response = await fetch(`${url}/v1/scoring/score`, {
            method: 'POST',
            headers,
            body: JSON.stringify({
              subject: `witnessed-${i}`,
              context: { jurisdiction: 'DE', on_time_ratio: (i % 97) / 100 },
            }),
          });
          expect(response.status).toBe(200);
          return ((await response.json()) as ScoreResponse).log_cid;
        };
        /** Polls until `read` gives a value `accept` takes. */
        const until = async <T>(read: () => Promise<T>, accept: (value: T) => boolean): Promise<T> => {
          const deadline = Date.now() + 20_000;
          for (;;) {
            const value = await read();
            if (accept(value)) return value;
            if (Date.now() > deadline)
              throw new Error(`timed out; last ${JSON.stringify(value)}\n${server.output}`);
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
        };
        const rootCheckpoint = async () => {
          const response = await fetch(`${url}/log/root/checkpoint`).catch(() => undefined);
          return response?.ok ? ((await response.json()) as Schemas['RootCheckpoint']) : undefined;
        };
        const proofFile = async (cid: string) => {
          const response = await fetch(`${url}/v1/logs/${cid}/proof-file`, { headers });
          return response.ok ? response.text() : undefined;
        };

        const first = await Promise.all(Array.from({ length: 20 }, (_, i) => score(i)));
        const firstRoot = await until(rootCheckpoint, (root) => root !== undefined);
        expect((await verifyCheckpoint(policy, firstRoot?.note as string, ORIGIN)).witnessed).toEqual(
          new Set(['p1', 'p2']),
        );
        const file = await until(
          () => proofFile(first[19] as string),
          (text) => text !== undefined,
        );
        const verified = await verifyProofFile(file as string, policyText, { cid: first[19] as string });
        expect(verified.witnesses).toEqual(['p1', 'p2']);
        // The polling auditor with the policy checks the root log too: quorum, inclusion, and (next run) growth.
        const tenantOrigin = (
          (await (await fetch(`${url}/v1/log/checkpoint`, { headers })).json()) as { origin: string }
        ).origin;
        const state = join(dir, 'audit-state.json');
        const auditArgs = [
          '--key',
          logKey,
          '--origin',
          tenantOrigin,
          '--state',
          state,
          '--policy',
          policyPath,
        ];
        const audited = await audit(url, key, auditArgs);
        expect(audited.stderr).toBe('');
        expect(audited.stdout).toMatch(/^OK .* in root tree size \d+ cosigned by p1, p2\n$/);
        // A policy whose second witness has another key: no quorum, the root log's check fails.
        const stranger = await new CosignatureSigner('witness.test/p2', randomBytes(32)).verifierKey();
        const wrongPolicy = join(dir, 'wrong.policy');
        writeFileSync(wrongPolicy, policyText.replace(witnesses[1]?.verifierKey as string, stranger));
        const refused = await audit(url, key, [
          '--key',
          logKey,
          '--origin',
          tenantOrigin,
          '--state',
          join(dir, 'audit-wrong.json'),
          '--policy',
          wrongPolicy,
        ]);
        expect(refused.code).toBe(1);
        expect(refused.stderr).toMatch(/^FAIL root log: /m);

        server.kill('SIGKILL');
        await server.exited;
        server = new BuiltServer(env);
        url = await server.baseUrl();
        const second = await Promise.all(Array.from({ length: 20 }, (_, i) => score(100 + i)));
        const secondFile = await until(
          () => proofFile(second[19] as string),
          (text) => text !== undefined,
        );
        expect(
          (await verifyProofFile(secondFile as string, policyText, { cid: second[19] as string })).witnesses,
        ).toEqual(['p1', 'p2']);
        const latest = (await rootCheckpoint()) as Schemas['RootCheckpoint'];
        expect(latest.tree_size).toBeGreaterThan(firstRoot?.tree_size as number);
        const consistency = (await (
          await fetch(
            `${url}/log/root/proofs/consistency?from=${firstRoot?.tree_size}&to=${latest.tree_size}`,
          )
        ).json()) as Schemas['RootConsistencyProof'];
        await checkTree(
          consistency.consistency_path.map((hash) => fromBase64(hash) as Uint8Array),
          latest.tree_size,
          fromBase64(latest.root_hash) as Uint8Array,
          firstRoot?.tree_size as number,
          fromBase64(firstRoot?.root_hash as string) as Uint8Array,
        );
        // The auditor again, with the state of its first run: the root log grew consistently.
        const again = await audit(url, key, auditArgs);
        expect(again.stderr).toBe('');
        expect(again.stdout).toMatch(/consistent\), in root tree size \d+ cosigned by p1, p2\n$/);
        // Neither witness refused a checkpoint as a fork or a bad proof (422); a 409 after the restart is the
        // resynchronisation of a client that forgot the witness's size.
        for (const witness of witnesses) expect(witness.process.output()).not.toMatch(/"status":422/);
      } finally {
        await server.stop('SIGKILL').catch(() => undefined);
        for (const witness of witnesses) await witness.process.stop('SIGTERM', 5000).catch(() => undefined);
      }
    }, 120_000);
  });
}
