import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The directory of the server's own modules, where the build also puts the files the server reads beside
 * them (`contract/`, the worker threads' modules such as `runs/scoring-thread.js`): `dist/` when built, `src/` under vitest. This module sits
 * at the root of src/ so that the URL is the same whether the server runs as tsc's output (this module is
 * dist/server-files.js) or as the production bundle (dist/main.js and its chunks, all at the root of
 * dist/: see scripts/bundle-server.ts). A module deeper down must not use its own `import.meta.url` to
 * find such a file: inside the bundle it would be the bundle's.
 */
export const SERVER_FILES = new URL('./', import.meta.url);

/**
 * The module of a worker thread, `path` relative to src/ without its extension: tsc's output (`.js`) when
 * the server is built, else, under vitest, its TypeScript source (`.ts`), which Node runs by stripping its
 * types. Such a module must import only Node's modules and types (`import type`): Node does not map a
 * `./x.js` import to `./x.ts`.
 */
export function threadModule(path: string): URL {
  const built = new URL(`${path}.js`, SERVER_FILES);
  return existsSync(fileURLToPath(built)) ? built : new URL(`${path}.ts`, SERVER_FILES);
}
