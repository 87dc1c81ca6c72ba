import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { usageOf } from './bench-args.ts';

const bench = (path: string) => fileURLToPath(new URL(`../${path}`, import.meta.url));

describe("a bench's command line", () => {
  it("prints the bench's own doc comment for --help (and -h), and exits 0", () => {
    const help = execFileSync(process.execPath, [bench('disk/compression.ts'), '--help'], {
      encoding: 'utf8',
    });
    expect(help).toBe(usageOf(new URL('../disk/compression.ts', import.meta.url).href));
    expect(help).toMatch(/^\S/);
    expect(help).not.toMatch(/^\s*\*/m);
    expect(execFileSync(process.execPath, [bench('disk/compression.ts'), '-h'], { encoding: 'utf8' })).toBe(
      help,
    );
  }, 60_000);

  it('refuses an unknown flag with what was wrong and the usage, exit 2, not a stack trace', () => {
    const run = spawnSync(process.execPath, [bench('score/run.ts'), '--rouns', '3'], { encoding: 'utf8' });
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/^Unknown option '--rouns'/);
    expect(run.stderr).toContain('npm run bench:score -- [--rounds 2]');
    expect(run.stderr).not.toMatch(/at parseArgs|node:internal/);
    expect(run.stdout).toBe('');
  }, 60_000);
});
