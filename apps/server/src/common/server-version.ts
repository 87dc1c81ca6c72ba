import { readFileSync } from 'node:fs';
import { SERVER_FILES } from '../server-files.js';

/**
 * The server package's version, from apps/server/package.json: the folder above the server's own files
 * (`dist/` when built, also in the production assembly and the image; `src/` under vitest). Read once.
 */
export const SERVER_VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', SERVER_FILES), 'utf8')) as { version: string }
).version;
