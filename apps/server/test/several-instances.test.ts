import { randomBytes } from 'node:crypto';
import type { ScoreResponse } from '@scenario-scoring/api-types';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { BuiltServer, requireBuiltServer } from './support/built-server.js';
import { createTestDatabase, type TestDatabase } from './support/test-databases.js';

const INSTANCES = 3;
const REQUESTS_PER_INSTANCE = 20;

let database: TestDatabase;
beforeAll(async () => {
  requireBuiltServer();
  database = await createTestDatabase('postgres');
});
afterAll(() => database.dispose());

it('three instances started at once on one fresh PostgreSQL all migrate safely, become ready and share the load', async () => {
  const env = {
    DATABASE_URL: database.options.databaseUrl ?? '',
    SECRETS_KEY: randomBytes(32).toString('base64'),
    LOG_SIGNING_KEY: randomBytes(32).toString('base64'),
    DATA_DIR: database.options.dataDir,
    METRICS_PORT: '0',
  };
  const servers = Array.from({ length: INSTANCES }, () => new BuiltServer(env));
  try {
    await Promise.all(servers.map((server) => server.waitUntilReady()));
    const urls = await Promise.all(servers.map((server) => server.baseUrl()));
    // Instances that start together may each create a first key; every one of them is valid.
    const key = servers.map((server) => server.firstKey()).find((found) => found !== undefined);
    if (key === undefined) throw new Error('no instance printed a first key');

    const answers = await Promise.all(
      Array.from({ length: INSTANCES * REQUESTS_PER_INSTANCE }, async (_, n) => {
        const response = await fetch(`${urls[n % INSTANCES]}/v1/scoring/score`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ subject: `instance-${n}`, context: { jurisdiction: 'DE' } }),
        });
        return { status: response.status, body: (await response.json()) as ScoreResponse };
      }),
    );
    expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 200));

    // Each instance scored its share, as its own metrics say; a log written by one is read by another.
    for (const server of servers) {
      const text = await (await fetch(await server.metricsUrl())).text();
      expect(text).toMatch(new RegExp(`^scenario_scoring_scores_total ${REQUESTS_PER_INSTANCE}$`, 'm'));
    }
    const cid = answers[0]?.body.log_cid;
    const read = await fetch(`${urls[1]}/v1/logs/${cid}`, { headers: { authorization: `Bearer ${key}` } });
    expect(read.status).toBe(200);
  } finally {
    const exits = await Promise.all(servers.map((server) => server.stop('SIGTERM')));
    expect(exits).toEqual(servers.map(() => ({ code: 0, signal: null })));
  }
  for (const server of servers) {
    expect(server.output).not.toMatch(/migration|"level":"error"/i);
  }
});
