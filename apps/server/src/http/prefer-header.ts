/**
 * The preferences of an RFC 7240 `Prefer` header (one or several, as Express joins them with ", "): each
 * preference's lower-cased name and its value (`''` without one; quotes removed), parameters after `;`
 * ignored. An absent header gives an empty map, without parsing anything.
 */
export function parsePreferences(header: string | undefined): Map<string, string> {
  const preferences = new Map<string, string>();
  if (header === undefined) return preferences;
  for (const part of header.split(',')) {
    const [token = ''] = part.split(';');
    const equals = token.indexOf('=');
    const name = (equals < 0 ? token : token.slice(0, equals)).trim().toLowerCase();
    if (name === '' || preferences.has(name)) continue;
    const value =
      equals < 0
        ? ''
        : token
            .slice(equals + 1)
            .trim()
            .replace(/^"(.*)"$/, '$1');
    preferences.set(name, value);
  }
  return preferences;
}

/** RFC 7240 `wait=<seconds>` as milliseconds, or undefined when absent or not a non-negative integer. */
export function preferredWaitMs(preferences: Map<string, string>): number | undefined {
  const wait = preferences.get('wait');
  return wait !== undefined && /^[0-9]{1,6}$/.test(wait) ? Number(wait) * 1000 : undefined;
}
