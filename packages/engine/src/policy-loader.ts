import { JURISDICTION_PATTERN } from './context-validator.js';
import { FACTOR_NAMES, type FactorName, isFactorName } from './factor-table.js';
import policyData from './policies.json' with { type: 'json' };
import type { Policy } from './score-types.js';

/** The sum every effective weight set has, so μ lies in [0, 1000]. */
export const WEIGHT_TOTAL = 1000;

/** A policy file entry with the default applied and disabled weights shared out. */
export interface ResolvedPolicyEntry {
  readonly description: string;
  readonly weights: Readonly<Record<FactorName, number>>;
  readonly review_threshold: number;
  readonly max_band: number;
}

/** A validated policy file: its version, its note and every entry resolved, keyed by policy id. */
export interface PolicySet {
  readonly policy_version: string;
  readonly note: string;
  readonly entries: Readonly<Record<string, ResolvedPolicyEntry>>;
}

/** Thrown when a policy file is malformed; the message lists every problem found. */
export class PolicyFileError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid policy file:\n- ${problems.join('\n- ')}`);
    this.name = 'PolicyFileError';
  }
}

type Raw = Record<string, unknown>;
const isObject = (v: unknown): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v);
const isNumberIn = (v: unknown, min: number, max: number): v is number =>
  typeof v === 'number' && Number.isFinite(v) && v >= min && v <= max;
const ENTRY_KEYS = new Set(['description', 'weights', 'review_threshold', 'max_band']);
// Floating tolerance for weights written as decimals in the file.
const SUM_TOLERANCE = 1e-9;

/**
 * Validates a parsed policy file and resolves its entries. Each entry overrides the default entry; a weight of
 * 0 disables a factor and the remaining weights are scaled by 1000 / (their sum), which shares the disabled
 * weight out pro rata. Throws `PolicyFileError` listing every problem.
 */
export function parsePolicyFile(data: unknown): PolicySet {
  const problems: string[] = [];
  if (!isObject(data)) throw new PolicyFileError(['the file must be a JSON object']);
  const { policy_version, note, policies } = data;
  if (typeof policy_version !== 'string' || policy_version === '')
    problems.push('policy_version must be a non-empty string');
  if (typeof note !== 'string') problems.push('note must be a string');
  if (!isObject(policies)) throw new PolicyFileError([...problems, 'policies must be an object']);
  const base = policies.default;
  if (!isObject(base)) throw new PolicyFileError([...problems, 'policies.default is required']);

  const entries: Record<string, ResolvedPolicyEntry> = {};
  for (const [id, entry] of Object.entries(policies)) {
    const where = `policies.${id}`;
    if (id !== 'default' && !JURISDICTION_PATTERN.test(id)) {
      problems.push(
        `${where}: the key must be "default" or a jurisdiction code (${JURISDICTION_PATTERN.source})`,
      );
    }
    if (!isObject(entry)) {
      problems.push(`${where} must be an object`);
      continue;
    }
    const resolved = resolveEntry(where, entry, id === 'default' ? undefined : base, problems);
    if (resolved) entries[id] = Object.freeze(resolved);
  }
  if (problems.length > 0) throw new PolicyFileError(problems);
  return Object.freeze({
    policy_version: policy_version as string,
    note: note as string,
    entries: Object.freeze(entries),
  });
}

function resolveEntry(where: string, entry: Raw, base: Raw | undefined, problems: string[]) {
  const before = problems.length;
  for (const key of Object.keys(entry))
    if (!ENTRY_KEYS.has(key)) problems.push(`${where}: unknown key "${key}"`);
  if (typeof entry.description !== 'string' || entry.description === '') {
    problems.push(`${where}.description must be a non-empty string`);
  }
  const own = entry.weights ?? {};
  if (!isObject(own)) {
    problems.push(`${where}.weights must be an object`);
    return undefined;
  }
  for (const [name, weight] of Object.entries(own)) {
    if (!isFactorName(name)) problems.push(`${where}.weights: unknown factor "${name}"`);
    else if (!isNumberIn(weight, 0, WEIGHT_TOTAL))
      problems.push(`${where}.weights.${name} must be a number in [0, 1000]`);
  }
  const inherited = isObject(base?.weights) ? base.weights : {};
  const merged = {} as Record<FactorName, number>;
  for (const name of FACTOR_NAMES) {
    const weight = own[name] ?? inherited[name];
    if (weight === undefined) problems.push(`${where}.weights.${name} is required`);
    merged[name] = typeof weight === 'number' ? weight : 0;
  }
  const limits = {
    review_threshold: entry.review_threshold ?? base?.review_threshold,
    max_band: entry.max_band ?? base?.max_band,
  };
  for (const [key, value] of Object.entries(limits)) {
    if (!isNumberIn(value, 0, WEIGHT_TOTAL)) problems.push(`${where}.${key} must be a number in [0, 1000]`);
  }
  if (problems.length > before) return undefined;

  const sum = FACTOR_NAMES.reduce((s, n) => s + merged[n], 0);
  const disabled = FACTOR_NAMES.some((n) => merged[n] === 0);
  // Only disabling a factor may leave less than 1000 to share out; anything else is a typo in the file.
  if (sum <= 0) problems.push(`${where}: at least one weight must be positive`);
  else if (sum > WEIGHT_TOTAL + SUM_TOLERANCE)
    problems.push(`${where}: weights sum to ${sum}, more than 1000`);
  else if (!disabled && sum < WEIGHT_TOTAL - SUM_TOLERANCE) {
    problems.push(`${where}: weights sum to ${sum}, not 1000, and no factor is disabled`);
  }
  if (problems.length > before) return undefined;

  const weights = {} as Record<FactorName, number>;
  for (const name of FACTOR_NAMES) weights[name] = (merged[name] * WEIGHT_TOTAL) / sum;
  return {
    description: entry.description as string,
    weights: Object.freeze(weights),
    review_threshold: limits.review_threshold as number,
    max_band: limits.max_band as number,
  };
}

/** The policy file shipped with the engine (`src/policies.json`), validated. */
export function loadPolicies(): PolicySet {
  return parsePolicyFile(policyData);
}

/** The shipped policies, validated once when the engine is imported (a broken file fails fast). */
export const POLICIES: PolicySet = loadPolicies();

/**
 * The effective policy for a jurisdiction code: its own entry, else its country's entry for a subdivision
 * (`US-NY` → `US`), else `default`. Throws a RangeError for a malformed code.
 */
export function effectivePolicy(jurisdiction: string, policies: PolicySet = POLICIES): Policy {
  if (!JURISDICTION_PATTERN.test(jurisdiction)) {
    throw new RangeError(
      `malformed jurisdiction code "${jurisdiction}" (expected ${JURISDICTION_PATTERN.source})`,
    );
  }
  const country = jurisdiction.slice(0, 2);
  const policyId =
    policies.entries[jurisdiction] !== undefined
      ? jurisdiction
      : policies.entries[country] !== undefined
        ? country
        : 'default';
  const entry = policies.entries[policyId];
  if (entry === undefined) throw new Error('policy set has no default entry');
  return {
    jurisdiction,
    policy_id: policyId,
    policy_version: policies.policy_version,
    weights: { ...entry.weights },
    review_threshold: entry.review_threshold,
    max_band: entry.max_band,
  };
}
