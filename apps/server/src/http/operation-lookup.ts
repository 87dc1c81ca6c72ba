import type { RequestHandler } from 'express';
import type { ContractOperation } from './contract-routes.js';

/** Finds the contract's operationId of a method and a concrete path, or undefined. */
export type OperationLookup = (method: string, path: string) => string | undefined;

/**
 * A lookup from (method, concrete path) to operationId: one map access for paths without parameters,
 * a few compiled patterns for the others. Requests are labelled with it before auth and validation, so
 * a 401 or a 400 is still counted under its operation.
 */
export function operationLookup(operations: readonly ContractOperation[]): OperationLookup {
  const exact = new Map<string, string>();
  const templated: { method: string; pattern: RegExp; operationId: string }[] = [];
  for (const { method, path, pattern, operationId } of operations) {
    const upper = method.toUpperCase();
    if (path.includes('{')) templated.push({ method: upper, pattern, operationId });
    else exact.set(`${upper} ${path}`, operationId);
  }
  return (method, path) => {
    // HEAD is answered by the GET route.
    const upper = method === 'HEAD' ? 'GET' : method;
    const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
    const found = exact.get(`${upper} ${trimmed}`);
    if (found !== undefined) return found;
    // The pattern allows the one trailing slash itself.
    return templated.find((entry) => entry.method === upper && entry.pattern.test(path))?.operationId;
  };
}

/** Records when the request started and which operation it is, for the request log and the metrics. */
export function identifyOperation(lookup: OperationLookup): RequestHandler {
  return (req, res, next) => {
    res.locals.startedAt = performance.now();
    res.locals.operationId = lookup(req.method, req.path);
    next();
  };
}
