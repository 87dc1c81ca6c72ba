// Bundles the server's entry point for a fast start: replaces tsc's dist/main.js by an esbuild bundle of
// src/main.ts and everything it imports, its dependencies included (Express, the validator, Ajv, Kysely,
// pino, undici, prom-client...). Resolving and reading a few hundred files of node_modules one by one
// was about a fifth of the time from spawning the server to its first ready /readyz (docs/benchmarks.md).
//
// - dist/main.js stays a small entry: it checks the Node version before it imports the runtime, which
//   needs node:sqlite (Node 24). The runtime is a chunk beside it, dist/main-runtime.js, loaded by the
//   entry's dynamic import (esbuild's code splitting); dist/main-chunk.js holds what both import.
// - The chunks live at the root of dist/, as main.ts does, so that what the server finds beside its own
//   modules (`contract/`, `runs/scoring-thread.js`: see src/server-files.ts) is found from them too.
// - Only dist/main.js is a bundle: the CLI, the scoring thread and the package's exports (dist/index.js)
//   stay tsc's output, which resolve their dependencies from node_modules as before.
// - The bundle is built from the installed node_modules, after patch-package has applied the reviewed
//   patches of patches/ (npm install's postinstall), so it carries them.
import { readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const serverDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(serverDir, 'dist');
const expected = ['dist/main.js', 'dist/main-chunk.js', 'dist/main-runtime.js'];
// tsc's main.js.map does not describe the bundle (esbuild writes its own), and no earlier chunk may stay.
for (const file of readdirSync(dist)) {
  if (/^main(-[\w-]+)?\.js(\.map)?$/.test(file) && file !== 'main.js') rmSync(join(dist, file));
}
rmSync(join(dist, 'main.js.map'), { force: true });

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
});
// A new chunk (another dynamic import) would need a look at the list above and at the docs.
const outputs = Object.keys(result.metafile.outputs).filter((file) => file.endsWith('.js'));
if (outputs.sort().join() !== [...expected].sort().join()) {
  console.error(`bundle-server: expected ${expected.join(' and ')}, esbuild wrote ${outputs.join(', ')}`);
  process.exit(1);
}
console.log(`bundle-server: bundled src/main.ts into ${expected.join(' and ')}`);
