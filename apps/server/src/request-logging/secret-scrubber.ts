/**
 * Field names whose values never reach a log line, at the top level or one object down (pino's redact
 * paths). Bodies are listed too: a request body may carry a webhook secret or personal data.
 */
export const redactedPaths: string[] = [
  'authorization',
  'cookie',
  'secret',
  'secrets',
  'secretsKey',
  'key',
  'token',
  'password',
  'body',
  'headers',
].flatMap((name) => [name, `*.${name}`]);

/**
 * API keys (`sk_` + 40 base62 characters) and webhook secrets (`whsec_` + base64), wherever they start: a
 * client may glue one to a word (`X-Request-Id: trace_sk_…`), so no word boundary is asked for. A word
 * that merely ends in `sk` (`task_12345678`) is masked too: a log line loses a little, never a key.
 */
const SECRET_PATTERN = /(sk|whsec)_[A-Za-z0-9+/=]{8,}/g;

/** Masks any API key or webhook secret inside `text`, keeping its prefix so the line stays readable. */
export function scrubSecrets(text: string): string {
  if (!text.includes('sk_') && !text.includes('whsec_')) return text;
  return text.replace(SECRET_PATTERN, '$1_[redacted]');
}

/**
 * `value` with every string scrubbed, objects and arrays copied only where something changed. Cheap on
 * the common line, whose strings hold neither prefix.
 */
export function scrubSecretsDeep(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return scrubSecrets(value);
  if (value === null || typeof value !== 'object' || depth > 8) return value;
  if (Array.isArray(value)) {
    let changed = false;
    const copy = value.map((item) => {
      const scrubbed = scrubSecretsDeep(item, depth + 1);
      changed ||= scrubbed !== item;
      return scrubbed;
    });
    return changed ? copy : value;
  }
  let copy: Record<string, unknown> | undefined;
  for (const [name, item] of Object.entries(value)) {
    const scrubbed = scrubSecretsDeep(item, depth + 1);
    if (scrubbed !== item) {
      copy ??= { ...(value as Record<string, unknown>) };
      copy[name] = scrubbed;
    }
  }
  return copy ?? value;
}
