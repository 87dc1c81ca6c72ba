/**
 * What an API key may do. Each operation's security requirement in the contract names the scope it needs
 * (`bearerAuth: [log:read]`, or `full` by the document's default); a key has one scope:
 *
 * - `full`: every operation (the scope of every key created before scopes existed).
 * - `log:read`: only the audit reads: the verifiable log's (records, checkpoints, proofs, tiles) and the
 *   scoring policies, to recompute a record's score; for auditors.
 */
export const KEY_SCOPES = ['full', 'log:read'] as const;

export type KeyScope = (typeof KEY_SCOPES)[number];

/** The scope of a key created without one. */
export const DEFAULT_KEY_SCOPE: KeyScope = 'full';

export function isKeyScope(value: string): value is KeyScope {
  return (KEY_SCOPES as readonly string[]).includes(value);
}

/** True when a key of scope `held` may use an operation that needs `needed`: `full` grants every scope. */
export function grants(held: KeyScope, needed: KeyScope): boolean {
  return held === 'full' || held === needed;
}
