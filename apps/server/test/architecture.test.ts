import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

// Import circles are refused by `npm run lint` (dpdm, run by `npm test`); these are the layer rules of
// docs/architecture.md that a circle check cannot see.
const SRC = join(dirname(fileURLToPath(import.meta.url)), '..', 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(dir, entry.name)]
        : [],
  );
}

/** Every relative import of the production sources, as [importer, imported], both relative to src/. */
const imports = sourceFiles(SRC)
  .filter((file) => !file.endsWith('.test.ts'))
  .flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(/from '(\.{1,2}\/[^']+)'/g)].map(
      ([, specifier]): [string, string] => [
        relative(SRC, file),
        relative(SRC, resolve(dirname(file), specifier as string)),
      ],
    ),
  );

it('storage/ imports nothing of a feature: features build their stores on it', () => {
  // server-files.ts, the leaf that locates the worker threads' modules, is no feature: it imports nothing.
  const outward = imports.filter(
    ([from, to]) => from.startsWith('storage/') && !to.startsWith('storage/') && to !== 'server-files.js',
  );
  expect(outward).toEqual([]);
  expect(imports.filter(([from]) => from === 'server-files.ts')).toEqual([]);
});

it('no production source runs code from a string (a Worker with eval: true, eval, new Function)', () => {
  // Such code is not type-checked, linted or seen by these rules: a worker thread is a module of its own.
  const evaluating = sourceFiles(SRC)
    .filter((file) => !file.endsWith('.test.ts'))
    .filter((file) => /\beval\s*[:(]|\bnew Function\s*\(/.test(readFileSync(file, 'utf8')))
    .map((file) => relative(SRC, file));
  expect(evaluating).toEqual([]);
});

it('production sources never import the test fixtures', () => {
  expect(imports.filter(([, to]) => to.startsWith('../'))).toEqual([]);
});

it('the webhook delivery engine and outbound safety never import the webhook API routes', () => {
  const upward = imports.filter(
    ([from, to]) => /^webhooks\/(delivery|outbound)\//.test(from) && /^webhooks\/api\/.*-routes/.test(to),
  );
  expect(upward).toEqual([]);
});
