/**
 * Copies the generated contract types (packages/api-types/src) into src/generated/api-types, so that the
 * published package's declarations are self-contained: @scenario-scoring/api-types is private and never
 * installed outside the workspace. Runs before build, typecheck and test; writes only files that changed,
 * each through a rename, because turbo may run build and typecheck of this package at the same time.
 * Plain JavaScript, not TypeScript: it runs on every Node a consumer may pack this package with (Node 20
 * and 22 cannot run a `.ts` file).
 */
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const SOURCE = fileURLToPath(new URL('../../api-types/src/', import.meta.url));
const TARGET = fileURLToPath(new URL('../src/generated/api-types/', import.meta.url));
const NOTICE = '// Copied from packages/api-types/src by scripts/copy-api-types.mjs. Do not edit.\n';

/** Every generated type file under `dir` (tests excluded). */
async function listTypeFiles(dir) {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.test.ts'))
    .map((e) => join(e.parentPath, e.name));
}

const sources = await listTypeFiles(SOURCE);
if (sources.length === 0) throw new Error(`No generated types found under ${SOURCE}`);
const wanted = new Set();
let written = 0;
for (const file of sources) {
  const target = join(TARGET, relative(SOURCE, file));
  wanted.add(target);
  const content = NOTICE + (await readFile(file, 'utf8'));
  if ((await readFile(target, 'utf8').catch(() => '')) === content) continue;
  await mkdir(dirname(target), { recursive: true });
  const temporary = `${target}.${process.pid}.tmp`;
  await writeFile(temporary, content);
  await rename(temporary, target);
  written += 1;
}
for (const stale of await listTypeFiles(TARGET)) {
  if (!wanted.has(stale)) await rm(stale, { force: true });
}
console.log(`client: api types up to date (${written} of ${sources.length} files rewritten)`);
