import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const SOURCE = fileURLToPath(new URL('./log-verifier.go', import.meta.url));
/** Debian's golang-go and golang-golang-x-mod-dev: GOPATH mode, nothing downloaded. */
const GO_ENV = { GO111MODULE: 'off', GOPATH: '/usr/share/gocode', GOFLAGS: '', GOTOOLCHAIN: 'local' };

/** What the Go verifier checks: signed checkpoint notes of the log `origin`, then proofs against their roots. */
export interface GoVerifierInput {
  verifier_key: string;
  /** The origin line every checkpoint must carry (`<LOG_ORIGIN>/<tenant>`). */
  origin: string;
  /** cosignature/v1 verifier keys whose valid cosignature every checkpoint must carry (root checkpoints). */
  cosigner_keys?: string[];
  checkpoints: string[];
  inclusions: { record: string; leaf_index: number; tree_size: number; path: string[] }[];
  consistencies: { from: number; to: number; path: string[] }[];
}

let built: Promise<string> | undefined;

/**
 * Builds `log-verifier.go` once per source version (the binary is kept in the temp dir, keyed by the
 * source's hash, so every suite and run after the first reuses it).
 */
export function buildGoLogVerifier(): Promise<string> {
  built ??= (async () => {
    const hash = createHash('sha256').update(readFileSync(SOURCE)).digest('hex').slice(0, 16);
    const dir = join(tmpdir(), 'scenario-scoring-go');
    const binary = join(dir, `log-verifier-${hash}`);
    if (existsSync(binary)) return binary;
    mkdirSync(dir, { recursive: true });
    await run('go', ['build', '-o', binary, SOURCE], {
      env: { ...process.env, ...GO_ENV, GOCACHE: join(dir, 'cache') },
    });
    return binary;
  })();
  return built;
}

/** Runs the Go verifier on `input`; resolves with its `ok: …` line, rejects with its error. */
export async function goVerify(input: GoVerifierInput): Promise<string> {
  const binary = await buildGoLogVerifier();
  const child = run(binary, [], { maxBuffer: 1 << 20 });
  child.child.stdin?.end(JSON.stringify(input));
  const { stdout } = await child;
  return stdout.trim();
}
