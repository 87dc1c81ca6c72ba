import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { exitUnlessNodeIsSupported } from './config/node-version.js';
import { API_KEY_CACHE_TTL_MS, type ApiKeyStore } from './keys/api-key-store.js';
import { formatKeyTable, formatUsageTable, KeyReferenceError, resolveKeyId } from './keys/key-admin.js';
import { DEFAULT_KEY_SCOPE, isKeyScope, KEY_SCOPES, type KeyScope } from './keys/key-scope.js';
import { ConfigError, loadConfig } from './server-config.js';

/** Tenant names: lower case, digits, `_` and `-`, starting with a letter or digit, at most 63 characters. */
export const TENANT_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;

const USAGE = `Usage: node dist/cli.js COMMAND [options]

Commands:
  create-key --tenant NAME [--scope SCOPE]
                                Create an API key for tenant NAME (created if new) and print it once.
                                NAME matches ${TENANT_NAME_PATTERN.source}. SCOPE is what the key
                                may do: full (every operation, the default) or log:read (only the
                                audit reads: log records and their notices, checkpoints, proofs,
                                tiles, the scoring policies and models; for auditors).
  list-keys [--tenant NAME] [--active]
                                List keys: id, tenant, scope, creation time, status. Never the keys
                                themselves (only their SHA-256 hashes are stored).
  usage [--tenant NAME]         Show each tenant's stored bytes and the quota it is held to
                                (TENANT_STORAGE_QUOTA; past it, creates answer 403 quota_exceeded).
  revoke-key KEY                Revoke a key, named by its id (key_…), a unique prefix of its id, or the
                                key itself (sk_…). A server that used the key in the last
                                ${API_KEY_CACHE_TTL_MS / 1000} s may accept it until its cache entry expires (at most ${API_KEY_CACHE_TTL_MS / 1000} s).
  log-faults [--tenant NAME]    List the log self-check faults no operator has cleared: tenant, when,
                                tree size, the leaf range holding an altered hash, what did not match.
                                Exits 1 when there is one.
  clear-log-fault --tenant NAME
                                After restoring the tenant's log data: check its stored hashes against
                                its last signed checkpoint (with the server's LOG_SIGNING_KEY or key
                                file) and, only if they match, clear its faults so the sequencer signs
                                its log again. Exits 1, clearing nothing, while they still do not.

Options:
  -h, --help                    Show this help.

The database is the server's: DATA_DIR (default ./data) for SQLite, or DATABASE_URL for PostgreSQL.`;

/** Exit code of a command line the CLI cannot run (POSIX "misuse"). */
const EXIT_USAGE = 2;

class UsageError extends Error {}

type Command =
  | { command: 'help' }
  | { command: 'create-key'; tenant: string; scope: KeyScope }
  | { command: 'list-keys'; tenant: string | undefined; activeOnly: boolean }
  | { command: 'revoke-key'; reference: string }
  | { command: 'usage'; tenant: string | undefined }
  | { command: 'log-faults'; tenant: string | undefined }
  | { command: 'clear-log-fault'; tenant: string };

function parseCommandLine(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      options: {
        tenant: { type: 'string' },
        scope: { type: 'string' },
        active: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function checkTenant(tenant: string): string {
  if (!TENANT_NAME_PATTERN.test(tenant)) {
    throw new UsageError(`invalid tenant name "${tenant}" (expected ${TENANT_NAME_PATTERN.source})`);
  }
  return tenant;
}

function parse(argv: string[]): Command {
  const { values, positionals } = parseCommandLine(argv);
  if (values.help) return { command: 'help' };
  const [command, ...rest] = positionals;
  if (command === undefined) throw new UsageError('no command given');
  if (command === 'revoke-key') {
    if (rest.length !== 1)
      throw new UsageError('revoke-key needs exactly one KEY (an id, an id prefix or sk_…)');
    return { command, reference: rest[0] as string };
  }
  if (rest.length > 0) throw new UsageError(`unexpected argument "${rest[0]}"`);
  if (command === 'usage' || command === 'log-faults') {
    return { command, tenant: values.tenant === undefined ? undefined : checkTenant(values.tenant) };
  }
  if (command === 'clear-log-fault') {
    if (values.tenant === undefined) throw new UsageError('clear-log-fault needs --tenant NAME');
    return { command, tenant: checkTenant(values.tenant) };
  }
  if (command === 'list-keys') {
    const tenant = values.tenant === undefined ? undefined : checkTenant(values.tenant);
    return { command, tenant, activeOnly: values.active === true };
  }
  if (command !== 'create-key') throw new UsageError(`unknown command "${command}"`);
  if (values.tenant === undefined) throw new UsageError('create-key needs --tenant NAME');
  const scope = values.scope ?? DEFAULT_KEY_SCOPE;
  if (!isKeyScope(scope)) {
    throw new UsageError(`invalid scope "${scope}" (expected one of: ${KEY_SCOPES.join(', ')})`);
  }
  return { command: 'create-key', tenant: checkTenant(values.tenant), scope };
}

/**
 * Runs the CLI: `create-key` prints only the new key on stdout, for scripts to capture; `list-keys` a
 * table; `revoke-key` one line naming the revoked key.
 */
async function run(argv: string[]): Promise<number> {
  let request: Command;
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
  exitUnlessNodeIsSupported();
  const config = loadConfig();
  // Imported only now: storage loads node:sqlite, which an older Node cannot even link.
  const { openStorage } = await import('./storage/storage.js');
  // Only create-key may make the database (a first start's key): the other commands read or change what a
  // server made, so a mistyped DATA_DIR (or a run from another directory) is said, not met with an empty one.
  if (config.databaseUrl === undefined && request.command !== 'create-key') {
    const { SQLITE_FILE_NAME } = await import('./storage/sqlite-database.js');
    const file = resolve(config.dataDir, SQLITE_FILE_NAME);
    if (!existsSync(file)) {
      console.error(
        `error: no database at ${file}: no server has run with DATA_DIR=${config.dataDir} (set DATA_DIR to the server's, or DATABASE_URL for PostgreSQL). Nothing was created.`,
      );
      return 1;
    }
  }
  const { wireFeatures } = await import('./features.js');
  const storage = await openStorage({ dataDir: config.dataDir, databaseUrl: config.databaseUrl });
  // The key store as the server wires it (features.ts), not queries of the CLI's own.
  const { loadSecretsKey } = await import('./webhooks/outbound/secret-box.js');
  const features = wireFeatures(storage, {
    secret: await loadSecretsKey({ secretsKey: config.webhooks.secretsKey, dataDir: config.dataDir }),
  });
  try {
    if (request.command === 'usage') {
      const { listTenantUsage } = await import('./quota/tenant-usage.js');
      const usage = await listTenantUsage(storage.db);
      console.log(formatUsageTable(usage, config.quota.tenantStorageQuotaBytes, request.tenant));
      return 0;
    }
    if (request.command === 'log-faults' || request.command === 'clear-log-fault') {
      const { runLogFaultCommand } = await import('./verifiable-log/log-fault-commands.js');
      return await runLogFaultCommand(storage.db, config.verifiableLog, config.dataDir, request);
    }
    return await runKeyCommand(features.keys, request);
  } finally {
    await features.close();
    await storage.close();
  }
}

async function runKeyCommand(
  keys: ApiKeyStore,
  request: Exclude<
    Command,
    { command: 'help' } | { command: 'usage' } | { command: 'log-faults' } | { command: 'clear-log-fault' }
  >,
): Promise<number> {
  switch (request.command) {
    case 'create-key': {
      const { key } = await keys.create(request.tenant, request.scope);
      console.log(key);
      return 0;
    }
    case 'list-keys': {
      console.log(
        formatKeyTable(await keys.list({ tenant: request.tenant, activeOnly: request.activeOnly })),
      );
      return 0;
    }
    case 'revoke-key': {
      let keyId: string;
      try {
        keyId = await resolveKeyId(keys, request.reference);
      } catch (error) {
        if (!(error instanceof KeyReferenceError)) throw error;
        console.error(`error: ${error.message}`);
        return 1;
      }
      const revoked = await keys.revoke(keyId);
      console.log(revoked ? `revoked ${keyId}` : `${keyId} was already revoked`);
      return 0;
    }
  }
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
