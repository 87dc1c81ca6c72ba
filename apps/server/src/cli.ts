import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config/server-config.js';
import { createApiKeyStore } from './keys/api-key-store.js';
import { openStorage } from './storage/storage.js';

/** Tenant names: lower case, digits, `_` and `-`, starting with a letter or digit, at most 63 characters. */
export const TENANT_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;

const USAGE = `Usage: node dist/cli.js create-key --tenant NAME

Commands:
  create-key --tenant NAME   Create an API key for tenant NAME (created if new) and print it once.
                             NAME matches ${TENANT_NAME_PATTERN.source}.

Options:
  -h, --help                 Show this help.

The database is the server's: DATA_DIR (default ./data) for SQLite, or DATABASE_URL for PostgreSQL.`;

/** Exit code of a command line the CLI cannot run (POSIX "misuse"). */
const EXIT_USAGE = 2;

class UsageError extends Error {}

function parseCommandLine(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      options: { tenant: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function parse(argv: string[]): { command: 'help' } | { command: 'create-key'; tenant: string } {
  const parsed = parseCommandLine(argv);
  const { values, positionals } = parsed;
  if (values.help) return { command: 'help' };
  const [command, ...rest] = positionals;
  if (command === undefined) throw new UsageError('no command given');
  if (command !== 'create-key') throw new UsageError(`unknown command "${command}"`);
  if (rest.length > 0) throw new UsageError(`unexpected argument "${rest[0]}"`);
  if (values.tenant === undefined) throw new UsageError('create-key needs --tenant NAME');
  if (!TENANT_NAME_PATTERN.test(values.tenant)) {
    throw new UsageError(`invalid tenant name "${values.tenant}" (expected ${TENANT_NAME_PATTERN.source})`);
  }
  return { command: 'create-key', tenant: values.tenant };
}

/** Runs the CLI: `create-key --tenant NAME` prints only the new key on stdout, for scripts to capture. */
async function run(argv: string[]): Promise<number> {
  let request: ReturnType<typeof parse>;
  try {
    request = parse(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`error: ${error.message}\n\n${USAGE}`);
    return EXIT_USAGE;
  }
  if (request.command === 'help') {
    console.log(USAGE);
    return 0;
  }
  const config = loadConfig();
  const storage = await openStorage({ dataDir: config.dataDir, databaseUrl: config.databaseUrl });
  try {
    const { key } = await createApiKeyStore(storage.db).create(request.tenant);
    console.log(key);
  } finally {
    await storage.close();
  }
  return 0;
}

run(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error instanceof ConfigError ? error.message : `error: ${(error as Error).message}`);
    process.exitCode = 1;
  },
);
