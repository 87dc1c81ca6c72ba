import { effectivePolicy, POLICIES, type Policy } from '@scenario-scoring/engine';
import { AppError } from '../errors/app-error.js';

/** What a deployment does with a jurisdiction that has no policy entry of its own (`UNKNOWN_JURISDICTION`). */
export type UnknownJurisdictionMode = 'default' | 'refuse';
export const UNKNOWN_JURISDICTION_MODES = ['default', 'refuse'] as const;

/** The jurisdictions with an entry of their own in the policy file (a country's covers its subdivisions). */
export const KNOWN_JURISDICTIONS: readonly string[] = Object.freeze(
  Object.keys(POLICIES.entries)
    .filter((id) => id !== 'default')
    .sort(),
);

/**
 * The policy a context is scored under: its jurisdiction's effective policy, `default` for a code without an
 * entry of its own (nor its country's), unless the deployment refuses such codes: then 422
 * `unknown_jurisdiction`, the detail listing the known ones and the endpoint that tells which policy a code gets.
 */
export function scoringPolicy(jurisdiction: string, mode: UnknownJurisdictionMode, item?: number): Policy {
  const policy = effectivePolicy(jurisdiction);
  if (mode === 'refuse' && policy.policy_id === 'default') {
    const known = KNOWN_JURISDICTIONS.map((id) => (id.length === 2 ? `${id} (and its subdivisions)` : id));
    throw new AppError('unknown_jurisdiction', {
      detail: `${item === undefined ? '' : `Item ${item}: `}${jurisdiction} has no scoring policy of its own and this deployment does not score such codes under default. Known: ${known.join(', ')}; see GET /v1/scoring/policies/{jurisdiction}.`,
    });
  }
  return policy;
}
