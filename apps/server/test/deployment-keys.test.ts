import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { BuiltServer, databaseEnv, requireBuiltServer } from './support/built-server.js';
import { createTestDatabase, type TestDatabase } from './support/test-databases.js';

let database: TestDatabase;
beforeAll(async () => {
  requireBuiltServer();
  database = await createTestDatabase('postgres');
});
afterAll(() => database.dispose());

it("an instance with another SECRETS_KEY, LOG_SIGNING_KEY or LOG_ORIGIN than the shared PostgreSQL's refuses to start, naming it; the first keeps working", async () => {
  const env = databaseEnv(database);
  const first = new BuiltServer(env);
  try {
    await first.waitUntilReady();
    const url = await first.baseUrl();
    const key = first.firstKey();
    if (key === undefined) throw new Error(`no first key in:\n${first.output}`);
    const score = () =>
      fetch(`${url}/v1/scoring/score`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ subject: 'key-check', context: { jurisdiction: 'DE' } }),
      }).then((response) => response.status);
    expect(await score()).toBe(200);

    for (const [variable, told] of [
      [
        'SECRETS_KEY',
        /SECRETS_KEY does not match the key this database was set up with: start every instance with the same SECRETS_KEY/,
      ],
      ['LOG_SIGNING_KEY', /LOG_SIGNING_KEY does not match the key this database's log is signed with/],
      // Another origin with the same key name: the verifier key is the same, the origin is checked apart.
      ['LOG_ORIGIN', /LOG_ORIGIN is not the origin this database's log is signed under/],
    ] as const) {
      const wrong = new BuiltServer({
        ...env,
        ...(variable === 'LOG_ORIGIN'
          ? { LOG_ORIGIN: 'example.com/another-log', LOG_KEY_NAME: 'localhost/scenario-scoring' }
          : { [variable]: randomBytes(32).toString('base64') }),
      });
      const { code } = await wrong.exited;
      expect(code, wrong.output).not.toBe(0);
      expect(wrong.output).toMatch(told);
      expect(wrong.output).toMatch(/Nothing was changed\./);
      // Refused before it listened or made a key.
      expect(wrong.output).not.toMatch(/listening|Created an API key/);
      expect(await score()).toBe(200);
    }

    // The stored values were not rewritten by the refused instances: one with the right keys still starts.
    const second = new BuiltServer(env);
    try {
      await second.waitUntilReady();
    } finally {
      expect(await second.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    }
    expect(await score()).toBe(200);
  } finally {
    expect(await first.stop('SIGTERM')).toEqual({ code: 0, signal: null });
  }
});
