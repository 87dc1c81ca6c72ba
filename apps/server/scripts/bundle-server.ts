// Bundles the server's entry point for a fast start: replaces tsc's dist/main.js by an esbuild bundle of
// src/main.ts and everything it imports, its dependencies included (Express, the validator, Ajv, Kysely,
// pino, undici, prom-client...), then writes Node's compile cache of the bundle. Resolving and reading a
// few hundred files of node_modules one by one was about a fifth of the time from spawning the server to
// its first ready /readyz, and parsing the bundle is most of what is left of loading it (see
// docs/benchmarks.md, "Start-up").
//
// - dist/main.js stays a small entry: it checks the Node version, then turns the compile cache on, then
//   imports the server, dist/main-start.js, a chunk beside it (esbuild's code splitting; dist/main-chunk.js
//   holds esbuild's helpers, which both use); the server needs node:sqlite (Node 24), which an older Node
//   cannot even link.
// - The chunk lives at the root of dist/, as main.ts does, so that what the server finds beside its own
//   modules (`contract/`, the worker threads' modules such as `runs/scoring-thread.js`: see
//   src/server-files.ts) is found from it too.
// - Only dist/main.js is a bundle: the CLI, the worker threads and the package's exports (dist/index.js)
//   stay tsc's output, which resolve their dependencies from node_modules as before.
// - The bundle is built from the installed node_modules, after patch-package has applied the reviewed
//   patches of patches/ (npm install's postinstall), so it carries them.
// - dist/.compile-cache/ holds V8's code cache of the chunk (portable: relative paths), written here by
//   loading the chunk once, so that the first start of a build, an assembly or an image finds it.
import { execFileSync } from 'node:child_process';
import { chmodSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';
import { asciiComments } from './ascii-comments.ts';

const serverDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(serverDir, 'dist');
const expected = ['dist/main.js', 'dist/main-start.js', 'dist/main-chunk.js'];
// tsc's main.js.map does not describe the bundle (esbuild writes its own), and no earlier chunk may stay.
for (const file of readdirSync(dist)) {
  if (/^main-[\w-]+\.js(\.map)?$/.test(file)) rmSync(join(dist, file));
}
rmSync(join(dist, 'main.js.map'), { force: true });

const BUILTINS = new Set(builtinModules);

/**
 * Node's built-in modules, where an ES module imports them, are required instead (a CommonJS module of
 * one line, `module.exports = require(...)`, whose members esbuild reads where they are used). An
 * `import` of a built-in makes Node build its ES module facade, which reads every export once, lazy
 * getters included: `node:http`'s `WebSocket` loads Node's copy of undici (25 ms of a start here),
 * `node:fs`'s streams, `node:crypto`'s webcrypto... (33 ms in all in a start profile). The CommonJS
 * dependencies already require them.
 */
const builtinsThroughRequire: Plugin = {
  name: 'builtins-through-require',
  setup(plugin) {
    plugin.onResolve({ filter: /^[\w:/]+$/ }, (args) => {
      if (args.kind !== 'import-statement') return undefined;
      const name = args.path.replace(/^node:/, '');
      if (!BUILTINS.has(name) && !BUILTINS.has(`node:${name}`)) return undefined;
      return { path: `node:${name}`, namespace: 'builtin-through-require' };
    });
    plugin.onLoad({ filter: /.*/, namespace: 'builtin-through-require' }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(args.path)});`,
      loader: 'js',
    }));
  },
};

const result = await build({
  absWorkingDir: serverDir,
  entryPoints: { main: 'src/main.ts' },
  outdir: 'dist',
  chunkNames: 'main-[name]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node24',
  sourcemap: true,
  // CommonJS dependencies call require() (for Node's built-in modules among others): give the ESM
  // bundle one, resolved from the bundle's own location.
  banner: {
    js: "import { createRequire as __bundleCreateRequire } from 'node:module'; const require = __bundleCreateRequire(import.meta.url);",
  },
  metafile: true,
  logLevel: 'warning',
  plugins: [builtinsThroughRequire],
});
// Another chunk (a new dynamic import) would need a look at the list above, the cache below and the docs.
const outputs = Object.keys(result.metafile.outputs).filter((file) => file.endsWith('.js'));
if (outputs.sort().join() !== [...expected].sort().join()) {
  console.error(`bundle-server: expected ${expected.join(' and ')}, esbuild wrote ${outputs.join(', ')}`);
  process.exit(1);
}

// The bundle as ASCII (scripts/ascii-comments.ts says why and how): a file it cannot make so safely stays as
// esbuild wrote it, correct, only slower to load.
for (const file of expected) {
  const path = join(serverDir, file);
  const original = readFileSync(path, 'utf8');
  const made = asciiComments(original);
  if (made.kind === 'unchanged') continue;
  if (made.kind === 'refused') {
    console.warn(`bundle-server: ${file} left with non-ASCII characters: ${made.reason}`);
    continue;
  }
  writeFileSync(path, made.text);
}

// Loading the chunk (without starting anything: main.js does that) compiles it and writes its cache.
const cache = join(dist, '.compile-cache');
rmSync(cache, { recursive: true, force: true });
execFileSync(
  process.execPath,
  [
    '--input-type=module',
    '-e',
    `await import(${JSON.stringify(pathToFileURL(join(dist, 'main-start.js')).href)});`,
  ],
  {
    env: { ...process.env, NODE_COMPILE_CACHE: cache, NODE_COMPILE_CACHE_PORTABLE: '1' },
    stdio: 'inherit',
  },
);
// Node writes it for its owner only; the image runs the server as another user than the one who built it.
for (const entry of readdirSync(cache, { recursive: true, withFileTypes: true })) {
  chmodSync(join(entry.parentPath, entry.name), entry.isDirectory() ? 0o755 : 0o644);
}
chmodSync(cache, 0o755);
console.log(
  `bundle-server: bundled src/main.ts into ${expected.join(' and ')}, compile cache in dist/.compile-cache`,
);
