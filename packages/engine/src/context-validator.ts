import { FACTORS } from './factor-table.js';
import type { ScoreContext } from './score-types.js';

/** An ISO 3166-1 alpha-2 country or ISO 3166-2 subdivision code, upper case. */
export const JURISDICTION_PATTERN = /^[A-Z]{2}(-[A-Z0-9]{1,3})?$/;

/** One problem with a context, shaped like the contract's validation `errors` items. */
export interface ContextIssue {
  /** JSON Pointer into the context, e.g. `/utilization`. */
  path: string;
  message: string;
}

/** Thrown by scoring when given a context that `contextIssues` rejects: a caller's mistake, not data. */
export class InvalidContextError extends Error {
  readonly issues: readonly ContextIssue[];

  constructor(issues: readonly ContextIssue[]) {
    super(`invalid scoring context: ${issues.map((i) => `${i.path} ${i.message}`).join('; ')}`);
    this.name = 'InvalidContextError';
    this.issues = issues;
  }
}

const KNOWN_KEYS = new Set<string>(['jurisdiction', ...FACTORS.map((f) => f.key)]);

/** Every problem with a context (empty when valid), so a 400 can list them all rather than the first. */
export function contextIssues(context: unknown): ContextIssue[] {
  if (typeof context !== 'object' || context === null || Array.isArray(context)) {
    return [{ path: '', message: 'must be an object' }];
  }
  const record = context as Record<string, unknown>;
  const issues: ContextIssue[] = [];
  const jurisdiction = record.jurisdiction;
  if (jurisdiction === undefined) {
    issues.push({ path: '/jurisdiction', message: 'is required' });
  } else if (typeof jurisdiction !== 'string' || !JURISDICTION_PATTERN.test(jurisdiction)) {
    issues.push({ path: '/jurisdiction', message: `must match ${JURISDICTION_PATTERN.source}` });
  }
  for (const factor of FACTORS) {
    const value = record[factor.key];
    if (value === undefined) continue;
    const [min, max] = factor.range;
    const path = `/${factor.key}`;
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      issues.push({ path, message: 'must be a finite number' });
    } else if (factor.integer && !Number.isInteger(value)) {
      issues.push({ path, message: 'must be an integer' });
    } else if (value < min || value > max) {
      issues.push({ path, message: `must be between ${min} and ${max}` });
    }
  }
  // Unknown keys are rejected so that a typo such as `utilisation` is not silently scored as missing.
  for (const key of Object.keys(record).sort()) {
    if (!KNOWN_KEYS.has(key)) issues.push({ path: `/${key}`, message: 'is not a known context key' });
  }
  return issues;
}

/** Narrows a value to a valid `ScoreContext`, or throws `InvalidContextError` listing every issue. */
export function assertValidContext(context: unknown): asserts context is ScoreContext {
  if (isValidContext(context)) return;
  throw new InvalidContextError(contextIssues(context));
}

/**
 * Whether `contextIssues` would find nothing, decided without building the issue list or sorting keys: every
 * scoring asks this first, and only an invalid context pays for the full list. Tested to agree with it.
 */
export function isValidContext(context: unknown): context is ScoreContext {
  if (typeof context !== 'object' || context === null || Array.isArray(context)) return false;
  const record = context as Record<string, unknown>;
  const jurisdiction = record.jurisdiction;
  if (typeof jurisdiction !== 'string' || !JURISDICTION_PATTERN.test(jurisdiction)) return false;
  for (const factor of FACTORS) {
    const value = record[factor.key];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isFinite(value)) return false;
    if (factor.integer && !Number.isInteger(value)) return false;
    if (value < factor.range[0] || value > factor.range[1]) return false;
  }
  for (const key of Object.keys(record)) if (!KNOWN_KEYS.has(key)) return false;
  return true;
}
