/**
 * The directory of the server's own modules, where the build also puts the files the server reads beside
 * them (`contract/`, `runs/scoring-thread.js`): `dist/` when built, `src/` under vitest. This module sits
 * at the root of src/ so that the URL is the same whether the server runs as tsc's output (this module is
 * dist/server-files.js) or as the production bundle (dist/main.js and its chunks, all at the root of
 * dist/: see scripts/bundle-server.ts). A module deeper down must not use its own `import.meta.url` to
 * find such a file: inside the bundle it would be the bundle's.
 */
export const SERVER_FILES = new URL('./', import.meta.url);
