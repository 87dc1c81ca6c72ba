/**
 * Copies the generated contract types (packages/api-types/src) into src/generated/api-types, and the
 * verifiable-log package (packages/tlog/src) into src/generated/tlog, so that the published package is
 * self-contained: @scenario-scoring/api-types and @scenario-scoring/tlog are private and never installed
 * outside the workspace. Runs before build, typecheck and test; writes only files that changed,
 * each through a rename, because turbo may run build and typecheck of this package at the same time.
 * Plain JavaScript, not TypeScript: it runs on every Node a consumer may pack this package with (Node 20
 * and 22 cannot run a `.ts` file).
 */
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const COPIES = [
  ['../../api-types/src/', '../src/generated/api-types/', 'packages/api-types/src'],
  ['../../tlog/src/', '../src/generated/tlog/', 'packages/tlog/src'],
].map(([source, target, name]) => ({
  source: fileURLToPath(new URL(source, import.meta.url)),
  target: fileURLToPath(new URL(target, import.meta.url)),
  notice: `// Copied from ${name} by scripts/copy-api-types.mjs. Do not edit.\n`,
}));

/** Every generated type file under `dir` (tests excluded). */
async function listTypeFiles(dir) {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.test.ts'))
    .map((e) => join(e.parentPath, e.name));
}

let written = 0;
let total = 0;
for (const { source, target: targetDir, notice } of COPIES) {
  const sources = await listTypeFiles(source);
  if (sources.length === 0) throw new Error(`No sources found under ${source}`);
  const wanted = new Set();
  for (const file of sources) {
    const target = join(targetDir, relative(source, file));
    wanted.add(target);
    const content = notice + (await readFile(file, 'utf8'));
    total += 1;
    if ((await readFile(target, 'utf8').catch(() => '')) === content) continue;
    await mkdir(dirname(target), { recursive: true });
    const temporary = `${target}.${process.pid}.tmp`;
    await writeFile(temporary, content);
    await rename(temporary, target);
    written += 1;
  }
  for (const stale of await listTypeFiles(targetDir)) {
    if (!wanted.has(stale)) await rm(stale, { force: true });
  }
}
console.log(`client: api types and tlog up to date (${written} of ${total} files rewritten)`);
