/**
 * scripts/start.sh's choice of webhook receivers: a local start (NODE_ENV unset) lets webhooks reach this
 * machine, a production start does not. Run on a copy of the script whose setup, build and server are
 * stubs (the server prints the environment it was started with), so it takes milliseconds.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SERVER_DIR } from './support/built-server.js';

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'ss-start-script-'));
  mkdirSync(join(root, 'scripts'));
  mkdirSync(join(root, 'bin'));
  copyFileSync(join(SERVER_DIR, '..', '..', 'scripts', 'start.sh'), join(root, 'scripts', 'start.sh'));
  writeFileSync(join(root, 'scripts', 'setup.sh'), '');
  for (const [name, body] of [
    ['npx', 'exit 0'],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template
    ['node', 'echo "allowed=${WEBHOOK_ALLOWED_CIDRS-unset} node_env=${NODE_ENV-unset}"'],
  ]) {
    writeFileSync(join(root, 'bin', name as string), `#!/bin/sh\n${body}\n`);
    chmodSync(join(root, 'bin', name as string), 0o755);
  }
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Runs the stubbed start.sh with exactly `env` (plus PATH). */
function start(env: Record<string, string>): { stdout: string; stderr: string } {
  const result = spawnSync('bash', [join(root, 'scripts', 'start.sh')], {
    env: { PATH: `${join(root, 'bin')}:/usr/bin:/bin`, ...env },
    encoding: 'utf8',
  });
  expect(result.status, result.stderr).toBe(0);
  return { stdout: result.stdout, stderr: result.stderr };
}

it('a local start (NODE_ENV unset) allows a webhook receiver on this machine, and says so', () => {
  const { stdout, stderr } = start({});
  expect(stdout).toBe('allowed=127.0.0.1/32,::1/128 node_env=unset\n');
  expect(stderr).toMatch(
    /Local start: webhooks may go to a receiver on this machine \(WEBHOOK_ALLOWED_CIDRS=127\.0\.0\.1\/32,::1\/128\)/,
  );
});

it('a production start keeps refusing loopback receivers', () => {
  expect(start({ NODE_ENV: 'production' }).stdout).toBe('allowed=unset node_env=production\n');
});

it('an allowlist given, even empty, is kept as given', () => {
  expect(start({ WEBHOOK_ALLOWED_CIDRS: '' }).stdout).toBe('allowed= node_env=unset\n');
  expect(start({ WEBHOOK_ALLOWED_CIDRS: '10.0.0.0/8' }).stdout).toBe('allowed=10.0.0.0/8 node_env=unset\n');
});
