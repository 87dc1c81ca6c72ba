import type { RequestHandler } from 'express';
import { AppError } from '../errors/app-error.js';
import type { ApiKeyStore } from '../keys/api-key-store.js';

const CHALLENGE = { 'WWW-Authenticate': 'Bearer realm="scenario-scoring"' };
const BEARER_PREFIX_LENGTH = 'bearer '.length;

/**
 * Authenticates `/v1/` requests by their bearer API key and records its owner in `res.locals.apiKey`.
 * No key → 401 `missing_api_key`; a key the storage does not know → 401 `invalid_api_key`.
 */
export function authenticate(keys: Pick<ApiKeyStore, 'find'>): RequestHandler {
  return async (req, res, next) => {
    const header = req.headers.authorization;
    // The scheme is case-insensitive (RFC 9110 §11.1); Node trims the value, so a key is never empty.
    if (header === undefined || header.slice(0, BEARER_PREFIX_LENGTH).toLowerCase() !== 'bearer ') {
      throw new AppError('missing_api_key', {
        detail: 'Send your API key as "Authorization: Bearer sk_…".',
        headers: CHALLENGE,
      });
    }
    const owner = await keys.find(header.slice(BEARER_PREFIX_LENGTH));
    if (owner === undefined) {
      throw new AppError('invalid_api_key', {
        detail: 'The API key is not valid: mistyped, revoked or from another deployment.',
        headers: CHALLENGE,
      });
    }
    res.locals.apiKey = owner;
    next();
  };
}
