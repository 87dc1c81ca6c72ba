/** The server's settings, read from the environment only. */
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** A PostgreSQL URL; undefined means SQLite in `dataDir`. */
  databaseUrl: string | undefined;
  nodeEnv: 'development' | 'test' | 'production';
  bodyLimitBytes: number;
  /** Requests per second per API key; 0 disables the limit. */
  rateLimitPerSecond: number;
}

/** Thrown when the environment is invalid; the message names every bad variable. */
export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid configuration:\n- ${problems.join('\n- ')}`);
    this.name = 'ConfigError';
  }
}

const NODE_ENVS = ['development', 'test', 'production'] as const;
const MAX_BODY_LIMIT_BYTES = 64 * 1024 * 1024;
const MAX_PORT = 65_535;
const DECIMAL_INTEGER = /^[0-9]+$/;

/**
 * Reads and validates the configuration: `PORT` (3000), `HOST` (0.0.0.0), `DATA_DIR` (./data),
 * `DATABASE_URL` (none: SQLite), `NODE_ENV` (production), `BODY_LIMIT_BYTES` (1 MiB) and
 * `RATE_LIMIT_PER_SECOND` (1000; 0 disables). Throws a ConfigError naming every bad variable.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = DECIMAL_INTEGER.test(raw) ? Number(raw) : Number.NaN;
    if (!(value >= min && value <= max)) {
      problems.push(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
    }
    return value;
  };
  const text = (name: string, fallback: string): string => {
    const raw = env[name];
    if (raw === undefined) return fallback;
    if (raw.trim() === '') problems.push(`${name} must not be empty`);
    return raw;
  };

  const port = integer('PORT', 3000, 0, MAX_PORT);
  const host = text('HOST', '0.0.0.0');
  const dataDir = text('DATA_DIR', './data');
  const databaseUrl = env.DATABASE_URL === '' ? undefined : env.DATABASE_URL;
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push('DATABASE_URL must be a postgres:// or postgresql:// URL (leave it unset for SQLite)');
  }
  const nodeEnv = env.NODE_ENV === undefined || env.NODE_ENV === '' ? 'production' : env.NODE_ENV;
  if (!(NODE_ENVS as readonly string[]).includes(nodeEnv)) {
    problems.push(`NODE_ENV must be one of ${NODE_ENVS.join(', ')} (got "${nodeEnv}")`);
  }
  const bodyLimitBytes = integer('BODY_LIMIT_BYTES', 1_048_576, 1, MAX_BODY_LIMIT_BYTES);
  const rateLimitPerSecond = integer('RATE_LIMIT_PER_SECOND', 1000, 0, 1_000_000);

  if (problems.length > 0) throw new ConfigError(problems);
  return {
    port,
    host,
    dataDir,
    databaseUrl,
    nodeEnv: nodeEnv as Config['nodeEnv'],
    bodyLimitBytes,
    rateLimitPerSecond,
  };
}
