import type { RequestHandler } from 'express';
import type { ContractOperation } from './contract-routes.js';

/** Where the versioning and deprecation policy is published (the Link of a deprecated operation). */
export const DEPRECATION_POLICY_LINK = '</docs>; rel="deprecation"; type="text/html"';

/** The headers every answer of a deprecated operation carries. */
export interface DeprecationHeaders {
  /** RFC 9745: `@<unix seconds>`, when the operation was deprecated. */
  Deprecation: string;
  /** RFC 8594: an HTTP date, the earliest moment the operation may stop answering. */
  Sunset?: string;
  Link: string;
}

/** Thrown when the contract marks an operation deprecated without saying when (the policy needs it). */
export class DeprecationContractError extends Error {}

function parseDate(value: unknown, what: string): Date {
  const date = typeof value === 'string' && /^\d{4}-\d{2}-\d{2}/.test(value) ? new Date(value) : undefined;
  if (date === undefined || Number.isNaN(date.getTime())) {
    throw new DeprecationContractError(
      `${what} must be a date such as 2026-11-01 (got ${JSON.stringify(value)})`,
    );
  }
  return date;
}

/**
 * The deprecation headers of each operation the contract marks `deprecated: true`, by operationId. Such
 * an operation must say since when (`x-deprecated-at`) and may say until when (`x-sunset`), both dates.
 */
export function deprecatedOperations(
  operations: readonly ContractOperation[],
): Map<string, DeprecationHeaders> {
  const deprecated = new Map<string, DeprecationHeaders>();
  for (const { operationId, definition } of operations) {
    if (definition.deprecated !== true) continue;
    const since = parseDate(definition['x-deprecated-at'], `${operationId}: x-deprecated-at`);
    const headers: DeprecationHeaders = {
      Deprecation: `@${Math.floor(since.getTime() / 1000)}`,
      Link: DEPRECATION_POLICY_LINK,
    };
    if (definition['x-sunset'] !== undefined) {
      const sunset = parseDate(definition['x-sunset'], `${operationId}: x-sunset`);
      if (sunset <= since)
        throw new DeprecationContractError(`${operationId}: x-sunset is not after x-deprecated-at`);
      headers.Sunset = sunset.toUTCString();
    }
    deprecated.set(operationId, headers);
  }
  return deprecated;
}

/**
 * Adds `Deprecation`, `Sunset` and `Link` to every answer (errors included) of a deprecated operation, so
 * clients see the notice in their logs long before the operation goes. Runs after `identifyOperation`.
 */
export function deprecationHeaders(operations: readonly ContractOperation[]): RequestHandler {
  const deprecated = deprecatedOperations(operations);
  return (_req, res, next) => {
    const headers = deprecated.get(res.locals.operationId ?? '');
    if (headers !== undefined) {
      res.setHeader('Deprecation', headers.Deprecation);
      if (headers.Sunset !== undefined) res.setHeader('Sunset', headers.Sunset);
      res.append('Link', headers.Link);
    }
    next();
  };
}
