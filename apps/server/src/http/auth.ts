import type { RequestHandler } from 'express';
import { AppError } from '../errors/app-error.js';
import { API_KEY_PATTERN } from '../keys/api-key.js';
import type { ApiKeyStore } from '../keys/api-key-store.js';
import { BoundedCache } from '../keys/bounded-cache.js';
import { retryAfterSeconds, type TokenBucket, tokensAt } from './token-bucket.js';

const CHALLENGE = { 'WWW-Authenticate': 'Bearer realm="scenario-scoring"' };
const BEARER_PREFIX_LENGTH = 'bearer '.length;

/** Lookups of well-formed keys the storage does not know, per client address: a burst of this many, refilled at this rate a second. */
export const UNKNOWN_KEYS_PER_SECOND = 20;

/**
 * Authenticates `/v1/` requests by their bearer API key and records its owner in `res.locals.apiKey`.
 * No key → 401 `missing_api_key`; a key the storage does not know → 401 `invalid_api_key`.
 *
 * Every well-formed key not in the cache is a lookup on the database, which on SQLite is one connection
 * that every tenant's commits wait for. So an address that sent more than `unknownKeysPerSecond` unknown
 * keys (a burst of as many, refilled at that rate) gets 429 `rate_limited` with `Retry-After` for any key
 * not already cached, without a lookup, until its allowance refills; keys found recently (cached) still
 * pass, from every address. The allowances are kept for the 10,000 most recent addresses.
 */
export function authenticate(
  keys: Pick<ApiKeyStore, 'find' | 'findCached'>,
  options: { unknownKeysPerSecond?: number; now?: () => number } = {},
): RequestHandler {
  const perSecond = options.unknownKeysPerSecond ?? UNKNOWN_KEYS_PER_SECOND;
  const now = options.now ?? performance.now.bind(performance);
  // Each address's allowance of unknown keys.
  const allowances = new BoundedCache<string, TokenBucket>({ maxEntries: 10_000, ttlMs: 60_000, now });

  return async (req, res, next) => {
    const header = req.headers.authorization;
    // The scheme is case-insensitive (RFC 9110 §11.1); Node trims the value, so a key is never empty.
    if (header === undefined || header.slice(0, BEARER_PREFIX_LENGTH).toLowerCase() !== 'bearer ') {
      throw new AppError('missing_api_key', {
        detail: 'Send your API key as "Authorization: Bearer sk_…".',
        headers: CHALLENGE,
      });
    }
    const key = header.slice(BEARER_PREFIX_LENGTH);
    const address = req.socket.remoteAddress ?? '';
    let owner = keys.findCached(key);
    if (owner === undefined && API_KEY_PATTERN.test(key)) {
      const tokens = tokensAt(allowances.get(address), now(), perSecond);
      if (tokens < 1) {
        const retryAfter = retryAfterSeconds(tokens, perSecond);
        throw new AppError('rate_limited', {
          detail: `Too many unknown API keys from this address (at most ${perSecond} a second); retry in ${retryAfter} s.`,
          headers: { 'Retry-After': String(retryAfter) },
        });
      }
      owner = await keys.find(key);
      if (owner === undefined) {
        // Counted once the lookup missed, from the allowance as it is now.
        const after = now();
        allowances.set(address, {
          tokens: tokensAt(allowances.get(address), after, perSecond) - 1,
          updatedAt: after,
        });
      }
    }
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
