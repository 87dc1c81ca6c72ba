import type { Erasure, Problem, ScoreResponse } from '@scenario-scoring/api-types';
import { cidOfBytes } from '@scenario-scoring/engine';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unpackRecord } from '../src/storage/record-codec.js';
import { openStorage } from '../src/storage/storage.js';
import { BuiltServer, databaseEnv, requireBuiltServer } from './support/built-server.js';
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from './support/test-databases.js';

/** The subject's records: with two per transaction, the erasure takes ~200 batches, so the kill lands mid-way. */
const RECORDS = 400;
const OTHERS = 20;
const TIMEOUT_MS = 120_000;

beforeAll(() => requireBuiltServer());

/** Rows whose bytes and erasure mark disagree: bytes kept but marked erased, or emptied but not marked. */
async function halfErased(database: TestDatabase): Promise<number> {
  const storage = await openStorage(database.options);
  try {
    const length = storage.kind === 'postgres' ? sql`octet_length(bytes)` : sql`length(bytes)`;
    const row = await sql<{ n: number | string }>`
      select count(*) as n from log_records
      where (erasure_id is null and ${length} = 0) or (erasure_id is not null and ${length} > 0)`.execute(
      storage.db,
    );
    return Number(row.rows[0]?.n);
  } finally {
    await storage.close();
  }
}

for (const kind of DATABASE_KINDS) {
  describe(`an erasure when the server is killed (${kind})`, () => {
    let database: TestDatabase;
    let env: Record<string, string>;
    beforeAll(async () => {
      database = await createTestDatabase(kind);
      env = {
        ...databaseEnv(database),
        // Two rows per transaction and a short lease: the kill lands mid-erasure, the restart resumes soon.
        ERASURE_BATCH_SIZE: '2',
        // Erasures start at once: every scoring of the subject was answered before the erasure was asked.
        ERASURE_SETTLE: '0s',
        ERASURE_LEASE: '500ms',
        ERASURE_POLL_INTERVAL: '50ms',
      };
    });
    afterAll(() => database.dispose());

    it('when SIGKILLed mid-erasure and restarted, then it resumes and completes with the right counts, and no record is ever served half-erased', {
      timeout: TIMEOUT_MS,
    }, async () => {
      let server = new BuiltServer(env);
      let url = await server.baseUrl();
      const key = server.firstKey();
      if (key === undefined) throw new Error(`no first key in:\n${server.output}`);
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
      const score = async (subject: string, i: number) => {
        const response = await fetch(`${url}/v1/scoring/score`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ subject, context: { jurisdiction: 'DE', on_time_ratio: (i % 97) / 100 } }),
        });
        expect(response.status).toBe(200);
        return ((await response.json()) as ScoreResponse).log_cid;
      };
      const subjectCids: string[] = [];
      for (let i = 0; i < RECORDS; i += 20) {
        subjectCids.push(
          ...(await Promise.all(Array.from({ length: 20 }, (_, j) => score('sigkill-me', i + j)))),
        );
      }
      const otherCids = await Promise.all(Array.from({ length: OTHERS }, (_, i) => score(`keep-${i}`, i)));

      // Every answer served for the subject's records, before, across and after the kill: whole or 410.
      const served = { whole: 0, erased: 0, refused: 0 };
      const wrong: string[] = [];
      let polling = true;
      const poller = (async () => {
        for (let i = 0; polling; i += 1) {
          const cid = subjectCids[i % subjectCids.length] as string;
          const response = await fetch(`${url}/v1/logs/${cid}`, { headers }).catch(() => undefined);
          if (!response) {
            served.refused += 1;
            await new Promise((resolve) => setTimeout(resolve, 5));
            continue;
          }
          if (response.status === 200) {
            const bytes = new Uint8Array(await response.arrayBuffer());
            if (cidOfBytes(bytes) === cid) served.whole += 1;
            else wrong.push(`${cid}: 200 with bytes of ${bytes.byteLength} that are not its record`);
          } else if (response.status === 410) {
            const problem = (await response.json()) as Problem;
            if (problem.code === 'log_record_erased') served.erased += 1;
            else wrong.push(`${cid}: 410 ${problem.code}`);
          } else {
            wrong.push(`${cid}: ${response.status} ${await response.text()}`);
          }
        }
      })();

      const accepted = await fetch(`${url}/v1/erasures`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ subject: 'sigkill-me' }),
      });
      expect(accepted.status).toBe(202);
      const { id } = (await accepted.json()) as Erasure;
      const erasureAt = async () =>
        (await (await fetch(`${url}/v1/erasures/${id}`, { headers })).json()) as Erasure;
      for (let at = await erasureAt(); at.counts.log_records < 10; at = await erasureAt()) {
        expect(at.status).toBe('pending');
      }
      await server.stop('SIGKILL');

      // Killed mid-way: some records erased, not all, and none half-erased.
      const killed = await openStorage(database.options);
      const atKill = await killed.db
        .selectFrom('erasures')
        .select(['status', 'log_records', 'progress'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      await killed.close();
      expect(atKill.status).toBe('pending');
      expect(Number(atKill.log_records)).toBeGreaterThanOrEqual(10);
      expect(Number(atKill.log_records)).toBeLessThan(RECORDS);
      expect(await halfErased(database)).toBe(0);

      server = new BuiltServer(env);
      try {
        url = await server.baseUrl();
        const deadline = Date.now() + 60_000;
        let erasure = await erasureAt();
        while (erasure.status !== 'completed' && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          erasure = await erasureAt();
        }
        polling = false;
        await poller;
        expect(erasure.status).toBe('completed');
        expect(erasure.counts.log_records).toBe(RECORDS);
        expect(erasure.log_cids).toEqual([...subjectCids].sort());
        expect(wrong).toEqual([]);
        expect(served.whole).toBeGreaterThan(0);
        expect(served.erased).toBeGreaterThan(0);
        for (const cid of subjectCids)
          expect((await fetch(`${url}/v1/logs/${cid}`, { headers })).status).toBe(410);
        for (const cid of otherCids)
          expect((await fetch(`${url}/v1/logs/${cid}`, { headers })).status).toBe(200);
      } finally {
        polling = false;
        await poller;
        await server.stop('SIGTERM');
      }

      expect(await halfErased(database)).toBe(0);
      const storage = await openStorage(database.options);
      try {
        // Logged once and announced once, though two workers processed it.
        const logged = await storage.db
          .selectFrom('log_records')
          .select('bytes')
          .where('request_id', '=', id)
          .execute();
        expect(logged).toHaveLength(1);
        const record = JSON.parse(unpackRecord(logged[0]?.bytes ?? new Uint8Array()).toString()) as {
          log_cids: string[];
        };
        expect(record.log_cids).toEqual([...subjectCids].sort());
        const events = await storage.db
          .selectFrom('events')
          .select('id')
          .where('type', '=', 'subject.erased')
          .execute();
        expect(events).toHaveLength(1);
      } finally {
        await storage.close();
      }
    });
  });
}
