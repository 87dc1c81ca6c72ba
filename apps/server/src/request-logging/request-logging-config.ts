import type { EnvReader } from '../config/env-reader.js';

/** The levels a log line can have, least severe first. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** How the server logs. */
export interface LogConfig {
  /** Lines below this level are dropped. */
  level: LogLevel;
  /** `json`: one JSON object per line (production); `pretty`: coloured and readable (development). */
  format: 'json' | 'pretty';
}

/** Reads `LOG_LEVEL` (info) and `LOG_FORMAT` (pretty in development, json otherwise). */
export function readLogConfig(reader: EnvReader, context: { nodeEnv: string }): LogConfig {
  return {
    level: reader.choice('LOG_LEVEL', 'info', LOG_LEVELS),
    format: reader.choice('LOG_FORMAT', context.nodeEnv === 'development' ? 'pretty' : 'json', [
      'json',
      'pretty',
    ] as const),
  };
}
