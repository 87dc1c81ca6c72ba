import { beforeAll, expect, it } from 'vitest';
import {
  BuiltServer,
  forEachServerDatabase,
  requireBuiltServer,
  runBuiltCli,
} from './support/built-server.js';

beforeAll(() => requireBuiltServer());

forEachServerDatabase('the key commands of the built CLI', (env) => {
  it('lists keys without showing them, and a revoked key (by id prefix or by itself) is refused', async () => {
    const first = (await runBuiltCli(['create-key', '--tenant', 'acme'], env())).stdout.trim();
    const second = (await runBuiltCli(['create-key', '--tenant', 'globex'], env())).stdout.trim();

    const listed = await runBuiltCli(['list-keys'], env());
    expect(listed).toMatchObject({ code: 0, stderr: '' });
    const lines = listed.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+TENANT\s+SCOPE\s+CREATED\s+STATUS$/);
    expect(lines.slice(1).map((line) => line.split(/\s+/)[1])).toEqual(['acme', 'globex']);
    expect(listed.stdout).not.toContain(first);
    const ids = lines.slice(1).map((line) => line.split(/\s+/)[0] as string);

    const server = new BuiltServer(env());
    try {
      const base = await server.baseUrl();
      const policy = (key: string) =>
        fetch(`${base}/v1/scoring/policies/DE`, { headers: { authorization: `Bearer ${key}` } }).then(
          (r) => r.status,
        );
      // Revoked before the server used them: refused at once (only keys found are cached).
      const byPrefix = await runBuiltCli(['revoke-key', (ids[0] as string).slice(0, 20)], env());
      expect(byPrefix).toMatchObject({ code: 0, stdout: `revoked ${ids[0]}\n` });
      expect(await policy(first)).toBe(401);
      expect(await policy(second)).toBe(200);

      const byKey = await runBuiltCli(['revoke-key', second], env());
      expect(byKey).toMatchObject({ code: 0, stdout: `revoked ${ids[1]}\n` });
      const again = await runBuiltCli(['revoke-key', ids[1] as string], env());
      expect(again.stdout).toBe(`${ids[1]} was already revoked\n`);
    } finally {
      await server.stop();
    }

    const active = await runBuiltCli(['list-keys', '--active', '--tenant', 'acme'], env());
    expect(active.stdout.trim().split('\n')).toHaveLength(1);
    const all = await runBuiltCli(['list-keys', '--tenant', 'acme'], env());
    expect(all.stdout).toMatch(/acme\s+full\s+\S+\s+revoked \d{4}-/);
  }, 60_000);

  it('creates a log:read key for an auditor, lists its scope, and the server holds it to the log reads', async () => {
    const auditor = (
      await runBuiltCli(['create-key', '--tenant', 'audited', '--scope', 'log:read'], env())
    ).stdout.trim();
    const full = (await runBuiltCli(['create-key', '--tenant', 'audited'], env())).stdout.trim();
    const listed = (await runBuiltCli(['list-keys', '--tenant', 'audited'], env())).stdout.trim().split('\n');
    expect(listed.slice(1).map((line) => line.split(/\s+/)[2])).toEqual(['log:read', 'full']);
    expect(await runBuiltCli(['create-key', '--tenant', 'audited', '--scope', 'admin'], env())).toMatchObject(
      {
        code: 2,
        stderr: expect.stringContaining('invalid scope "admin" (expected one of: full, log:read)'),
      },
    );

    const server = new BuiltServer(env());
    try {
      const base = await server.baseUrl();
      const get = (path: string, key: string) =>
        fetch(`${base}${path}`, { headers: { authorization: `Bearer ${key}` } });
      // The log is empty: 404 checkpoint_not_found is the log read answering, not the scope refusing.
      expect((await get('/v1/log/checkpoint', auditor)).status).toBe(404);
      expect((await get('/v1/scoring/policies/DE', auditor)).status).toBe(200);
      const refused = await get('/v1/webhooks', auditor);
      expect(refused.status).toBe(403);
      expect(await refused.json()).toMatchObject({ code: 'insufficient_scope' });
      expect((await get('/v1/webhooks', full)).status).toBe(200);
    } finally {
      await server.stop();
    }
  }, 60_000);

  it('refuses an ambiguous or unknown reference, saying why', async () => {
    await runBuiltCli(['create-key', '--tenant', 'initech'], env());
    await runBuiltCli(['create-key', '--tenant', 'initech'], env());
    const [, id] = (await runBuiltCli(['list-keys', '--tenant', 'initech'], env())).stdout.split('\n');
    // Two keys made a moment apart share the first characters of their ULIDs (the time).
    const shared = (id as string).slice(0, 'key_'.length + 4);
    expect(await runBuiltCli(['revoke-key', shared], env())).toMatchObject({
      code: 1,
      stderr: `error: "${shared}" matches several keys: give more of the id\n`,
    });
    expect((await runBuiltCli(['revoke-key', 'key_0'], env())).stderr).toContain('is neither a key id');
    expect(await runBuiltCli(['revoke-key', 'key_ZZZZZZ'], env())).toMatchObject({
      code: 1,
      stderr: 'error: no key id starts with "key_ZZZZZZ"\n',
    });
    expect(await runBuiltCli(['revoke-key', 'hello'], env())).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('is neither a key id'),
    });
    expect((await runBuiltCli(['revoke-key'], env())).code).toBe(2);
  });
});

it('refuses every command but create-key where no server has made a database, creating nothing', async () => {
  const { mkdtempSync, readdirSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const parent = mkdtempSync(join(tmpdir(), 'cli-no-database-'));
  const dataDir = join(parent, 'data');
  for (const args of [['list-keys'], ['revoke-key', 'key_01'], ['usage'], ['log-faults']]) {
    const ran = await runBuiltCli(args, { DATA_DIR: dataDir, NODE_ENV: 'production' });
    expect(ran, args[0]).toMatchObject({ code: 1, stdout: '' });
    expect(ran.stderr, args[0]).toBe(
      `error: no database at ${join(dataDir, 'scenario-scoring.sqlite')}: no server has run with DATA_DIR=${dataDir} (set DATA_DIR to the server's, or DATABASE_URL for PostgreSQL). Nothing was created.\n`,
    );
  }
  // Not even the directory, nor a secrets key.
  expect(readdirSync(parent)).toEqual([]);
  // create-key makes the database (a first key before the first start), and then the others work.
  expect(await runBuiltCli(['create-key', '--tenant', 'acme'], { DATA_DIR: dataDir })).toMatchObject({
    code: 0,
  });
  expect(await runBuiltCli(['list-keys'], { DATA_DIR: dataDir })).toMatchObject({ code: 0, stderr: '' });
}, 60_000);
