import type { RequestHandler } from 'express';
import type { StorageQuota } from '../quota/storage-quota.js';
import type { ContractOperation } from './contract-routes.js';

/** The contract's mark of an operation that stores for its tenant, and so is refused past the quota. */
const QUOTA_EXTENSION = 'x-storage-quota';

/** The operationIds the contract marks `x-storage-quota: true` (the creates: score, create run, register, …). */
export function quotaOperations(operations: readonly ContractOperation[]): Set<string> {
  return new Set(
    operations
      .filter(({ definition }) => definition[QUOTA_EXTENSION] === true)
      .map(({ operationId }) => operationId),
  );
}

/**
 * Refuses a marked operation with 403 `quota_exceeded` when the caller's tenant (authenticated before) is
 * at or over its storage quota; every other operation (reads, deletions, erasure) passes.
 */
export function enforceStorageQuota(quota: StorageQuota, marked: ReadonlySet<string>): RequestHandler {
  return (_req, res, next) => {
    const { operationId } = res.locals;
    if (operationId === undefined || !marked.has(operationId)) return next();
    const { tenantId } = res.locals.apiKey;
    // Nearly every request: the usage read within the refresh period is under the limit, decided at once.
    if (quota.freshlyUnder(tenantId)) return next();
    quota.check(tenantId).then(() => next(), next);
  };
}
