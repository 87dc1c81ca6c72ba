import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const packageDir = (name: string) => dirname(require.resolve(`${name}/package.json`));

/** The contract bundle that `@scenario-scoring/openapi` builds. */
export const BUNDLE_YAML = join(packageDir('@scenario-scoring/openapi'), 'dist', 'openapi.yaml');
export const BUNDLE_JSON = join(packageDir('@scenario-scoring/openapi'), 'dist', 'openapi.json');

/** The repository root: where a user runs `npm start`. */
export const REPO_ROOT = dirname(dirname(packageDir('@scenario-scoring/server')));
/** The server's entry and CLI as `npm start` and `npm run create-key` run them, relative to REPO_ROOT. */
export const SERVER_MAIN = join('apps', 'server', 'dist', 'main.js');
export const SERVER_CLI = join('apps', 'server', 'dist', 'cli.js');
