import type { RequestHandler } from 'express';
import { AppError } from '../errors/app-error.js';
import { grants, isKeyScope, type KeyScope } from '../keys/key-scope.js';
import type { ContractOperation } from './contract-routes.js';

/** The name of the contract's API key scheme (components.securitySchemes). */
const API_KEY_SCHEME = 'bearerAuth';

/**
 * The scope each operation needs, read from the contract: the operation's security requirement (or the
 * document's default) names it, e.g. `security: [{bearerAuth: [log:read]}]`. Operations without an API key
 * (`security: []`) have none. Thrown at start-up: a requirement that names no scope, several, one the server
 * does not know, or another scheme, so the contract and the enforcement cannot drift apart.
 */
export function requiredScopes(
  operations: readonly ContractOperation[],
  defaultSecurity: unknown,
): Map<string, KeyScope> {
  const scopes = new Map<string, KeyScope>();
  for (const { operationId, definition } of operations) {
    const security = (definition.security ?? defaultSecurity ?? []) as unknown;
    if (!Array.isArray(security)) throw new Error(`${operationId}: security is not a list`);
    if (security.length === 0) continue;
    const [requirement, ...others] = security as Record<string, unknown>[];
    const names = Object.keys(requirement ?? {});
    const listed = requirement?.[API_KEY_SCHEME];
    if (others.length > 0 || names.length !== 1 || !Array.isArray(listed) || listed.length !== 1) {
      throw new Error(
        `${operationId}: its security requirement must be one ${API_KEY_SCHEME} with exactly one scope`,
      );
    }
    const scope = String(listed[0]);
    if (!isKeyScope(scope)) throw new Error(`${operationId}: unknown scope "${scope}"`);
    scopes.set(operationId, scope);
  }
  return scopes;
}

/**
 * Refuses a request whose API key (authenticated before, `res.locals.apiKey`) lacks the scope its
 * operation needs with 403 `insufficient_scope`. A path that is no operation passes on, to its 404.
 */
export function requireScope(scopes: ReadonlyMap<string, KeyScope>): RequestHandler {
  return (_req, res, next) => {
    const { operationId } = res.locals;
    const needed = operationId === undefined ? undefined : scopes.get(operationId);
    const held = res.locals.apiKey.scope;
    if (needed !== undefined && !grants(held, needed)) {
      throw new AppError('insufficient_scope', {
        detail: `This API key has the scope ${held}; ${operationId} needs the scope ${needed}.`,
      });
    }
    next();
  };
}
