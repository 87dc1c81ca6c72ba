import type { RequestHandler } from 'express';
import { AppError } from '../errors/app-error.js';
import type { ContractOperation } from './contract-routes.js';

/** The answer of an operation the contract has and this server version does not implement yet: 501. */
export function notImplemented(operation: ContractOperation): RequestHandler {
  const detail = `${operation.method.toUpperCase()} ${operation.path} (${operation.operationId}) is not implemented by this server version yet.`;
  return () => {
    throw new AppError('not_implemented', { detail });
  };
}
