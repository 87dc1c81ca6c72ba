import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectLogRecord } from '../src/score-log/score-log-store.js';
import { openStorage } from '../src/storage/storage.js';
import { BuiltServer, databaseEnv, requireBuiltServer } from './support/built-server.js';
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from './support/test-databases.js';

const REQUESTS = 200;

beforeAll(() => requireBuiltServer());

for (const kind of DATABASE_KINDS) {
  describe(`the score log when the server is killed (${kind})`, () => {
    let database: TestDatabase;
    beforeAll(async () => {
      database = await createTestDatabase(kind);
    });
    afterAll(() => database.dispose());

    it('when SIGKILLed right after answering, then every record it answered 200 for is in the database', async () => {
      const server = new BuiltServer(databaseEnv(database));
      try {
        const url = await server.baseUrl();
        const key = server.firstKey();
        if (key === undefined) throw new Error(`no first key in:\n${server.output}`);
        const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
        // Concurrent, so that they are committed in groups (on SQLite, by the log writer thread).
        const answers = await Promise.all(
          Array.from({ length: REQUESTS }, async (_, i) => {
            const response = await fetch(`${url}/v1/scoring/score`, {
              method: 'POST',
              headers,
              body: JSON.stringify({
                subject: `killed-${i}`,
                context: { jurisdiction: 'DE', utilization: i / 100 },
              }),
            });
            return { status: response.status, body: (await response.json()) as { log_cid: string } };
          }),
        );
        expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 200));
        await server.stop('SIGKILL');

        const storage = await openStorage(database.options);
        try {
          for (const { body } of answers)
            expect(await selectLogRecord(storage.db, 'default', body.log_cid)).toBeDefined();
        } finally {
          await storage.close();
        }
      } finally {
        await server.stop('SIGKILL');
      }
    });
  });
}
