import { join } from 'node:path';
import type { ScoreResponse } from '@scenario-scoring/api-types';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  BuiltServer,
  forEachServerDatabase,
  requireBuiltServer,
  runBuiltCli,
  SERVER_DIR,
} from './support/built-server.js';

const SCORE = { subject: 'process-test', context: { jurisdiction: 'DE', utilization: 0.4 } };

beforeAll(() => requireBuiltServer());

forEachServerDatabase('the built server', (env) => {
  it('creates and prints a first key, listens on the real port, scores, and exits 0 on SIGTERM', async () => {
    const server = new BuiltServer(env());
    try {
      const [, key] = await server.waitFor(
        /Created an API key for tenant "default" \(shown once\): (sk_\w{40})\b/,
      );
      const [, port] = await server.waitFor(
        /scenario-scoring listening on http:\/\/localhost:(\d+) — docs at http:\/\/localhost:\1\/docs\n/,
      );
      expect(Number(port)).toBeGreaterThan(0);
      const response = await fetch(`http://127.0.0.1:${port}/v1/scoring/score`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(SCORE),
      });
      expect(response.status).toBe(200);
      expect(((await response.json()) as ScoreResponse).status).toBe('ok');
    } finally {
      server.kill('SIGTERM');
    }
    expect(await server.exited).toEqual({ code: 0, signal: null });
  });

  it('creates no key when one exists, and a key made by the CLI works at once', async () => {
    const server = new BuiltServer(env());
    try {
      const [, port] = await server.waitFor(/listening on http:\/\/localhost:(\d+)/);
      expect(server.output).not.toMatch(/Created an API key/);

      const created = await runBuiltCli(['create-key', '--tenant', 'acme'], env());
      expect(created).toMatchObject({ code: 0, stderr: '' });
      expect(created.stdout).toMatch(/^sk_[0-9A-Za-z]{40}\n$/);

      const response = await fetch(`http://127.0.0.1:${port}/v1/scoring/policies/DE`, {
        headers: { authorization: `Bearer ${created.stdout.trim()}` },
      });
      expect(response.status).toBe(200);
    } finally {
      server.kill('SIGINT');
    }
    expect((await server.exited).code).toBe(0);
  });
});

describe('the built CLI', () => {
  it('prints its usage on --help', async () => {
    const help = await runBuiltCli(['--help'], {});
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Usage: node dist\/cli\.js COMMAND/);
    for (const command of ['create-key --tenant NAME', 'list-keys', 'revoke-key KEY']) {
      expect(help.stdout).toContain(command);
    }
  });

  it('refuses bad arguments with a clear error and exit code 2', async () => {
    for (const [args, error] of [
      [[], /no command given/],
      [['delete-key'], /unknown command "delete-key"/],
      [['create-key'], /create-key needs --tenant NAME/],
      [['create-key', '--tenant', 'Bad Name'], /invalid tenant name "Bad Name"/],
      [['create-key', '--tenant', 'a', '--colour', 'red'], /Unknown option '--colour'/],
    ] as const) {
      const result = await runBuiltCli([...args], {});
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(error);
      expect(result.stderr).toMatch(/Usage:/);
    }
  });
});

describe('the built server with a bad environment', () => {
  it('names every bad or missing variable at once and exits non-zero', async () => {
    const server = new BuiltServer({
      PORT: 'eighty',
      BODY_LIMIT_BYTES: '0',
      DATA_DIR: '/tmp',
      DATABASE_URL: 'postgres://app@127.0.0.1:1/none',
      LOG_LEVEL: 'loud',
      METRICS_PORT: '99999',
      SHUTDOWN_GRACE: 'soon',
      WEBHOOK_TIMEOUT: 'fast',
    });
    const { code } = await server.exited;
    expect(code).not.toBe(0);
    for (const problem of [
      /PORT must be an integer/,
      /BODY_LIMIT_BYTES must be an integer/,
      /SECRETS_KEY is required with DATABASE_URL/,
      /LOG_LEVEL must be one of/,
      /METRICS_PORT must be an integer/,
      /SHUTDOWN_GRACE must be a duration/,
      /WEBHOOK_TIMEOUT must be a duration/,
    ]) {
      expect(server.output).toMatch(problem);
    }
    // Told before anything starts: no database was touched, nothing listened.
    expect(server.output).not.toMatch(/listening|"message":"started"/);
  });
});

describe('the built server on a port another process holds', () => {
  it('says so in plain words and exits 1, with no stack', async () => {
    const { createServer } = await import('node:net');
    const { mkdtempSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = taken.address() as { port: number };
      const server = new BuiltServer({
        PORT: String(port),
        DATA_DIR: mkdtempSync(join(tmpdir(), 'port-taken-')),
      });
      expect((await server.exited).code).toBe(1);
      expect(server.output).toContain(
        `Cannot listen on 127.0.0.1 port ${port}: another process is using it. Stop it, or start this server on another PORT (and HOST). Nothing was served.`,
      );
      expect(server.output).not.toMatch(/"stack"|EADDRINUSE/);
    } finally {
      taken.close();
    }
  });
});

describe('the built server on an older Node', () => {
  it('says it needs Node 24 and how to get it, instead of dying on node:sqlite', async () => {
    const { execFileSync, spawnSync } = await import('node:child_process');
    const node22 = execFileSync('bash', [join(SERVER_DIR, '..', '..', 'scripts', 'node22.sh')], {
      encoding: 'utf8',
    }).trim();
    for (const entry of ['main.js', 'cli.js']) {
      const args = entry === 'cli.js' ? ['list-keys'] : [];
      const ran = spawnSync(node22, [join(SERVER_DIR, 'dist', entry), ...args], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '', DATA_DIR: '/nonexistent' },
      });
      expect(ran.status, entry).toBe(1);
      expect(ran.stderr, entry).toContain('scenario-scoring needs Node 24 or newer; this is Node v22.');
      expect(ran.stderr, entry).not.toContain('ERR_UNKNOWN_BUILTIN_MODULE');
    }
  }, 120_000);
});
