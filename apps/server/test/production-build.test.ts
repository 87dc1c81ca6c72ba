import { execFile, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { builtinModules, createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { BuiltServer, requireBuiltServer, SERVER_DIR } from './support/built-server.js';

const REPO_ROOT = join(SERVER_DIR, '..', '..');
/** npm installs the production dependencies: from its cache when warm, else from the registry. */
const ASSEMBLY_TIMEOUT_MS = 110_000;

let outside: string;
let assembled: string;
beforeAll(async () => {
  requireBuiltServer();
  // Outside the repository, so Node cannot resolve anything from the workspace's node_modules.
  outside = await mkdtemp(join(tmpdir(), 'ss-production-'));
  assembled = join(outside, 'app');
  await promisify(execFile)('bash', [join(REPO_ROOT, 'scripts', 'assemble-production.sh'), assembled], {
    cwd: REPO_ROOT,
    env: process.env,
    timeout: ASSEMBLY_TIMEOUT_MS,
  });
}, ASSEMBLY_TIMEOUT_MS + 10_000);
afterAll(() => rm(outside, { recursive: true, force: true }));

it('holds the built server and its production dependencies, and no development one', () => {
  expect(existsSync(join(assembled, 'apps/server/dist/main.js'))).toBe(true);
  expect(existsSync(join(assembled, 'apps/server/dist/contract/openapi.json'))).toBe(true);
  // The worker threads' modules, beside the bundle's chunk as the server looks for them (server-files.ts).
  for (const thread of [
    'runs/scoring-thread.js',
    'storage/sqlite-connection-thread.js',
    'storage/sqlite-checkpoint-thread.js',
  ]) {
    expect(existsSync(join(assembled, 'apps/server/dist', thread)), thread).toBe(true);
  }
  // Resolved as the server resolves them (pino is nested under apps/server, as the lockfile places it).
  const fromServer = createRequire(join(assembled, 'apps/server/dist/main.js'));
  for (const present of ['express', 'kysely', 'pg', 'pino', 'prom-client', '@scenario-scoring/engine']) {
    expect(fromServer.resolve(present), present).toContain(assembled);
  }
  for (const absent of [
    'vitest',
    'typescript',
    'turbo',
    '@biomejs/biome',
    'autocannon',
    '@stoplight/prism-cli',
  ]) {
    expect(existsSync(join(assembled, 'node_modules', absent)), absent).toBe(false);
  }
  expect(existsSync(join(assembled, 'apps/server/src'))).toBe(false);
});

it('ships the server as a bundle whose compile cache, written by the build, is accepted where it was copied', () => {
  const dist = join(assembled, 'apps/server/dist');
  // The bundle imports no package: only Node's modules and its own chunks.
  const bundle = readFileSync(join(dist, 'main-start.js'), 'utf8');
  const imported = [...bundle.matchAll(/^(?:import|\}) .*from ["']([^"']+)["'];?$/gm)].map(([, from]) =>
    String(from),
  );
  expect(imported.length).toBeGreaterThan(0);
  expect(imported.filter((from) => !from.startsWith('node:') && !from.startsWith('./'))).toEqual([]);
  // ASCII only (scripts/bundle-server.ts: the dependencies' comments made it a two-byte string to decode
  // and hold at every start), and what it requires (the built-in modules) no package either.
  for (const file of ['main.js', 'main-start.js', 'main-chunk.js']) {
    expect(/[\u0080-\uffff]/.exec(readFileSync(join(dist, file), 'utf8')), file).toBeNull();
  }
  // esbuild's `__require` of what it left outside the bundle (Ajv's code generator also holds
  // `require("ajv/dist/runtime/...")` in strings, for standalone code, which are not requires), but
  // `pg-native`, pg's optional native driver, required only if `pg.native` is read (the server never does).
  const required = [...bundle.matchAll(/\b__require\("([^"]+)"\)/g)].map(([, from]) => String(from));
  expect(required.length).toBeGreaterThan(0);
  expect(
    required.filter(
      (from) =>
        from !== 'pg-native' &&
        !builtinModules.includes(from.replace(/^node:/, '')) &&
        !builtinModules.includes(from),
    ),
  ).toEqual([]);
  // Loading the bundle as main.js does, with Node telling whether it took V8's code from the cache.
  const loaded = spawnSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `await import(${JSON.stringify(pathToFileURL(join(dist, 'main-start.js')).href)});`,
    ],
    {
      encoding: 'utf8',
      env: {
        PATH: process.env.PATH ?? '',
        NODE_COMPILE_CACHE: join(dist, '.compile-cache'),
        NODE_COMPILE_CACHE_PORTABLE: '1',
        NODE_DEBUG_NATIVE: 'COMPILE_CACHE',
      },
    },
  );
  expect(loaded.status, loaded.stderr).toBe(0);
  expect(loaded.stderr + loaded.stdout).toMatch(
    /code cache for ESM file:\/\/\S+\/main-start\.js was accepted/,
  );
});

it('starts from the assembled output alone, becomes ready, scores, and drains on SIGTERM, printing no warning', async () => {
  const server = new BuiltServer(
    { DATA_DIR: join(outside, 'data') },
    join(assembled, 'apps/server/dist/main.js'),
  );
  try {
    await server.waitUntilReady();
    const key = server.firstKey();
    const response = await fetch(`${await server.baseUrl()}/v1/scoring/score`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ subject: 'production-build', context: { jurisdiction: 'DE' } }),
    });
    expect(response.status).toBe(200);
  } finally {
    expect(await server.stop('SIGTERM')).toEqual({ code: 0, signal: null });
  }
  // A process warning (a deprecation such as url.parse's DEP0169, which the start's validator warm-up
  // used to raise) is noise an operator would have to look into on every start.
  expect(server.output).not.toMatch(/Warning/);
});
