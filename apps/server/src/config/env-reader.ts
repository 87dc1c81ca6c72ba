/**
 * Reads environment variables for one area of the configuration, collecting every problem instead of
 * stopping at the first, so that a bad deployment is told everything that is wrong at once.
 */
export class EnvReader {
  readonly problems: string[] = [];
  constructor(readonly env: NodeJS.ProcessEnv) {}

  /** The raw value, or undefined when the variable is unset or empty. */
  raw(name: string): string | undefined {
    const value = this.env[name];
    return value === undefined || value === '' ? undefined : value;
  }

  /** A decimal integer in [min, max], or `fallback` when unset. */
  integer(name: string, fallback: number, min: number, max: number): number {
    const raw = this.raw(name);
    if (raw === undefined) return fallback;
    const value = /^[0-9]+$/.test(raw) ? Number(raw) : Number.NaN;
    if (!(value >= min && value <= max)) {
      this.problems.push(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
    }
    return value;
  }

  /** A non-blank string, or `fallback` when unset. */
  text(name: string, fallback: string): string {
    const raw = this.env[name];
    if (raw === undefined) return fallback;
    if (raw.trim() === '') this.problems.push(`${name} must not be empty`);
    return raw;
  }

  /** One of `choices`, or `fallback` when unset or empty. */
  choice<T extends string>(name: string, fallback: T, choices: readonly T[]): T {
    const raw = this.raw(name) ?? fallback;
    if (!(choices as readonly string[]).includes(raw)) {
      this.problems.push(`${name} must be one of ${choices.join(', ')} (got "${raw}")`);
    }
    return raw as T;
  }

  /** A duration such as `500ms`, `5s`, `5m`, `2h` or `1d`, in milliseconds, or `fallbackMs` when unset. */
  durationMs(name: string, fallbackMs: number, minMs = 0): number {
    const raw = this.raw(name);
    if (raw === undefined) return fallbackMs;
    const value = parseDurationMs(raw);
    if (value === undefined && /^[0-9]+(?:\.[0-9]+)?$/.test(raw)) {
      // A bare number was once read as milliseconds, so `WEBHOOK_TIMEOUT=15` meant 15 ms: ask for the unit.
      this.problems.push(
        `${name} needs a unit: "${raw}" could mean ${raw}ms or ${raw}s (write e.g. ${raw}s)`,
      );
      return fallbackMs;
    }
    if (value === undefined || value < minMs) {
      this.problems.push(
        `${name} must be a duration such as 500ms, 5s, 5m, 2h or 1d, at least ${minMs} ms (got "${raw}")`,
      );
      return fallbackMs;
    }
    return value;
  }

  /** A comma-separated list of durations (`5s,5m,30m`), in milliseconds. */
  durationListMs(name: string, fallbackMs: readonly number[]): number[] {
    const raw = this.raw(name);
    if (raw === undefined) return [...fallbackMs];
    const values = raw.split(',').map((part) => parseDurationMs(part.trim()));
    if (values.length === 0 || values.some((value) => value === undefined)) {
      this.problems.push(
        `${name} must be a comma-separated list of durations such as 5s,5m,30m (got "${raw}")`,
      );
      return [...fallbackMs];
    }
    return values as number[];
  }

  /** A comma-separated list of non-empty strings; `fallback` when unset. */
  list(name: string, fallback: readonly string[]): string[] {
    const raw = this.raw(name);
    if (raw === undefined) return [...fallback];
    return raw
      .split(',')
      .map((part) => part.trim())
      .filter((part) => part !== '');
  }
}

const DURATION_UNITS_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/** `500ms`, `5s`, `5m`, `2h`, `1d` in milliseconds; undefined if malformed or without a unit. */
export function parseDurationMs(text: string): number | undefined {
  const match = /^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d)$/.exec(text);
  if (!match) return undefined;
  return Math.round(Number(match[1]) * (DURATION_UNITS_MS[match[2] as string] as number));
}
