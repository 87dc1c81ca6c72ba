import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ResourceLimits } from 'node:worker_threads';

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

/**
 * The V8 heap limits every worker thread of the server starts with (the SQLite connection, its
 * checkpointer, the scoring pool); here, beside `threadModule`, since every module that starts a thread
 * imports this one. V8 sizes each isolate's heap from the machine's memory (on 24 GiB: up to 128 MiB of new
 * space and a 4 GiB old generation per isolate) and lets it grow lazily toward those limits, and each thread
 * is an isolate of its own. A thread's young generation is capped at 48 MiB (32 MiB of new space): a
 * scavenge then runs more often over the same live objects. The old generation keeps V8's limit: a lower one
 * would end a thread (ERR_WORKER_OUT_OF_MEMORY) rather than slow it. The `node` flags of docs/operating.md
 * (Memory) bound every isolate of the process, these threads' included.
 */
export const THREAD_RESOURCE_LIMITS: Readonly<ResourceLimits> = { maxYoungGenerationSizeMb: 48 };
