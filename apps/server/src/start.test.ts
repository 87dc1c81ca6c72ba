import { createServer } from 'node:net';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { TEST_MAINTENANCE_URL } from '../test/support/test-databases.js';
import { plainStartFailure } from './start.js';

/** The error a real listen on an address already taken throws. */
async function listenError(): Promise<Error> {
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  const { port } = taken.address() as { port: number };
  const second = createServer();
  try {
    return await new Promise<Error>((resolve) => {
      second.once('error', resolve);
      second.listen(port, '127.0.0.1');
    });
  } finally {
    taken.close();
  }
}

/** The error a real connection to `url` fails with. */
async function connectError(url: string): Promise<Error> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
  } catch (error) {
    return error as Error;
  } finally {
    await client.end().catch(() => {});
  }
  throw new Error(`${url} connected`);
}

describe('a start that fails for a reason outside the server', () => {
  it('says a taken port in plain words', async () => {
    const error = await listenError();
    expect(plainStartFailure(error)).toMatch(
      /^Cannot listen on 127\.0\.0\.1 port \d+: another process is using it\. Stop it, or start this server on another PORT \(and HOST\)\./,
    );
  });

  it('says a PostgreSQL database that does not exist, or nothing listening, in plain words', async () => {
    const url = new URL(TEST_MAINTENANCE_URL);
    url.pathname = '/no_such_database_for_plain_start';
    expect(plainStartFailure(await connectError(url.href))).toBe(
      'PostgreSQL says: database "no_such_database_for_plain_start" does not exist. Create it first (createdb, or CREATE DATABASE): the server makes its tables, not the database named in DATABASE_URL.',
    );
    const closed = 'postgres://postgres@127.0.0.1:1/x';
    expect(plainStartFailure(await connectError(closed))).toBe(
      'Cannot reach the database at 127.0.0.1 port 1 (ECONNREFUSED): is PostgreSQL running there, and is DATABASE_URL right?',
    );
  });

  it('leaves any other failure to the log, with its stack', () => {
    expect(plainStartFailure(new Error('boom'))).toBeUndefined();
    expect(plainStartFailure(undefined)).toBeUndefined();
  });
});
