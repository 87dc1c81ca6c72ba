/**
 * What the delivery suites that run the built server (`dist/main.js`) share: a fresh database with the
 * server's environment (compressed schedule, 127.0.0.1 allowed), the server process, and the bookkeeping
 * that tears them down. Webhooks, secrets and events are written straight into the database, as the API
 * would write them.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, beforeAll } from 'vitest';
import { openStorage, type Storage } from '../../src/storage/storage.js';
import { SecretBox } from '../../src/webhooks/outbound/secret-box.js';
import { BuiltServer, databaseEnv, requireBuiltServer } from './built-server.js';
import { createTestDatabase, type TestDatabase } from './test-databases.js';
import { createTestWebhook, startTestReceiver, type TestReceiver } from './test-webhooks.js';

/** Registers the checks and teardown of a suite that runs the built server; returns what its tests use. */
export function useServerProcesses() {
  beforeAll(() => requireBuiltServer());
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  const track = <T>(value: T, cleanup: (value: T) => Promise<unknown>) => {
    cleanups.push(() => cleanup(value));
    return value;
  };
  const prepare = async (kind: TestDatabase['kind'], env?: Record<string, string>) => {
    const setup = await setUp(kind, env);
    track(setup, async (s) => {
      await s.storage.close();
      await s.database.dispose();
    });
    return setup;
  };
  const serve = async (setup: Setup) => track(await startServer(setup), (p) => p.stop('SIGKILL', 5_000));
  const receive = async (...args: Parameters<typeof startTestReceiver>) =>
    track(await startTestReceiver(...args), (r) => r.close());
  return { prepare, serve, receive };
}

/** What one test runs against: a fresh database, the server's environment, a storage to write and read with. */
export interface Setup {
  database: TestDatabase;
  storage: Storage;
  secretBox: SecretBox;
  env: Record<string, string>;
}

async function setUp(kind: TestDatabase['kind'], env: Record<string, string> = {}): Promise<Setup> {
  const database = await createTestDatabase(kind);
  const secretsKey = randomBytes(32).toString('base64');
  return {
    database,
    storage: await openStorage(database.options),
    secretBox: new SecretBox(Buffer.from(secretsKey, 'base64')),
    env: {
      ...databaseEnv(database, secretsKey),
      WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
      WEBHOOK_RETRY_SCHEDULE: '50ms,100ms,200ms,400ms',
      WEBHOOK_POLL_INTERVAL: '50ms',
      ...env,
    },
  };
}

async function startServer(setup: Setup): Promise<BuiltServer> {
  const server = new BuiltServer(setup.env);
  await server.baseUrl();
  return server;
}

/** The event ids whose delivery has not succeeded yet. */
export async function undelivered(storage: Storage, eventIds: readonly string[]): Promise<string[]> {
  const done = await storage.db
    .selectFrom('deliveries')
    .select('event_id')
    .where('status', '=', 'succeeded')
    .execute();
  const succeeded = new Set(done.map((row) => row.event_id));
  return eventIds.filter((id) => !succeeded.has(id));
}

/** The `webhook-id` of every request the receiver got, in order. */
export const receivedIds = (receiver: TestReceiver) =>
  receiver.requests.map((r) => r.headers['webhook-id'] as string);

/** Registers the receiver as a webhook of tenant `default` (the server's first tenant), for every event. */
export function webhookTo(setup: Setup, receiver: TestReceiver): Promise<unknown> {
  return createTestWebhook(setup.storage, setup.secretBox, {
    tenantId: 'default',
    url: receiver.url,
    now: new Date(Date.now() - 1000),
  });
}
