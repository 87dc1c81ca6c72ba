import type { RequestHandler } from 'express';
import { AppError } from '../errors/app-error.js';
import { API_KEY_PATTERN } from '../keys/api-key.js';
import type { ApiKeyStore } from '../keys/api-key-store.js';
import { BoundedCache } from '../keys/bounded-cache.js';
import { clientAddress } from './client-address.js';
import { retryAfterSeconds, type TokenBucket, tokensAt } from './token-bucket.js';

const CHALLENGE = { 'WWW-Authenticate': 'Bearer realm="scenario-scoring"' };
const BEARER_PREFIX_LENGTH = 'bearer '.length;

/** Keys that turn out unknown, per client address: a burst of this many, refilled at this rate a second. */
export const UNKNOWN_KEYS_PER_SECOND = 20;
/** Database lookups that find no key, on this instance from every address together, a second (and burst). */
export const UNKNOWN_KEY_LOOKUPS_PER_SECOND = 200;
/** Requests without a key, or with one not shaped like a key, per client address: a burst of this many, refilled a second. */
export const KEYLESS_REQUESTS_PER_SECOND = 20;
/** How many client addresses the allowances are kept for (the most recent ones). */
const TRACKED_ADDRESSES = 10_000;

/**
 * Authenticates `/v1/` requests by their bearer API key and records its owner in `res.locals.apiKey`.
 * No key → 401 `missing_api_key`; a key the storage does not know → 401 `invalid_api_key`.
 *
 * A key found before (cached) passes at once, and a key the lookup finds passes and is never counted:
 * only what turns out unknown is. A key not cached costs a database lookup (on SQLite the one connection
 * every tenant's commits wait for), so those are bounded twice: each client address (see
 * `clientAddress`: behind trusted proxies, the forwarded one) may have `unknownKeysPerSecond` turn out
 * unknown, and the instance `unknownKeyLookupsPerSecond` from all addresses together, taken before the
 * lookup and given back when it finds the key. An address past its own allowance is still looked up
 * while more than half the instance's allowance is left (so a valid key that shares its address with a
 * flood of random ones still gets through, unless the flood outruns that half too); past that, and for
 * everyone once the instance's allowance is spent, a key not cached is 429 `rate_limited` with
 * `Retry-After` without a lookup. A key the storage recently did not know costs no lookup (it is cached
 * as unknown) but still counts against its address. Requests with no key or one not shaped like a key
 * cost nothing but a log line, and are limited per address too (`keylessPerSecond`): past it, 429.
 */
export function authenticate(
  keys: Pick<ApiKeyStore, 'find' | 'findCached'>,
  options: {
    unknownKeysPerSecond?: number;
    unknownKeyLookupsPerSecond?: number;
    keylessPerSecond?: number;
    now?: () => number;
  } = {},
): RequestHandler {
  const perAddress = options.unknownKeysPerSecond ?? UNKNOWN_KEYS_PER_SECOND;
  const perInstance = options.unknownKeyLookupsPerSecond ?? UNKNOWN_KEY_LOOKUPS_PER_SECOND;
  const keylessPerSecond = options.keylessPerSecond ?? KEYLESS_REQUESTS_PER_SECOND;
  const now = options.now ?? performance.now.bind(performance);
  const tracked = () =>
    new BoundedCache<string, TokenBucket>({ maxEntries: TRACKED_ADDRESSES, ttlMs: 60_000, now });
  // Each address's allowance of unknown keys, and of requests without a (well-formed) key.
  const allowances = tracked();
  const keyless = tracked();
  // The instance's allowance of lookups that may miss.
  let lookups: TokenBucket = { tokens: perInstance, updatedAt: now() };

  /** Takes one from `address`'s bucket in `buckets`; false (nothing taken) when it holds less than one. */
  const take = (buckets: BoundedCache<string, TokenBucket>, address: string, perSecond: number): boolean => {
    const time = now();
    const tokens = tokensAt(buckets.get(address), time, perSecond);
    if (tokens < 1) return false;
    buckets.set(address, { tokens: tokens - 1, updatedAt: time });
    return true;
  };
  const giveBack = (buckets: BoundedCache<string, TokenBucket>, address: string, perSecond: number) => {
    const time = now();
    buckets.set(address, { tokens: tokensAt(buckets.get(address), time, perSecond) + 1, updatedAt: time });
  };
  const refuse = (perSecond: number, tokens: number, what: string) => {
    const retryAfter = retryAfterSeconds(tokens, perSecond);
    return new AppError('rate_limited', {
      detail: `Too many ${what}; retry in ${retryAfter} s.`,
      headers: { 'Retry-After': String(retryAfter) },
    });
  };
  const refuseKeyless = (address: string) => {
    if (!take(keyless, address, keylessPerSecond)) {
      const tokens = tokensAt(keyless.get(address), now(), keylessPerSecond);
      return refuse(
        keylessPerSecond,
        tokens,
        `requests without a valid API key from this address (at most ${keylessPerSecond} a second)`,
      );
    }
    return undefined;
  };
  const invalid = () =>
    new AppError('invalid_api_key', {
      detail: 'The API key is not valid: mistyped, revoked or from another deployment.',
      headers: CHALLENGE,
    });

  return async (req, res, next) => {
    const header = req.headers.authorization;
    // The scheme is case-insensitive (RFC 9110 §11.1); Node trims the value, so a key is never empty.
    if (header === undefined || header.slice(0, BEARER_PREFIX_LENGTH).toLowerCase() !== 'bearer ') {
      throw (
        refuseKeyless(clientAddress(req)) ??
        new AppError('missing_api_key', {
          detail: 'Send your API key as "Authorization: Bearer sk_…".',
          headers: CHALLENGE,
        })
      );
    }
    const key = header.slice(BEARER_PREFIX_LENGTH);
    let owner = keys.findCached(key);
    if (owner === undefined) {
      // Only a lookup can tell: take from both allowances first, so concurrent lookups are bounded too.
      const address = clientAddress(req);
      const time = now();
      const instanceTokens = tokensAt(lookups, time, perInstance);
      const ownTurn = instanceTokens >= 1 && take(allowances, address, perAddress);
      if (!ownTurn && instanceTokens < perInstance / 2 + 1) {
        const tokens = Math.max(tokensAt(allowances.get(address), time, perAddress), 0);
        throw instanceTokens < 1
          ? refuse(
              perInstance,
              instanceTokens,
              `unknown API keys (at most ${perInstance} a second are looked up)`,
            )
          : refuse(perAddress, tokens, `unknown API keys from this address (at most ${perAddress} a second)`);
      }
      lookups = { tokens: instanceTokens - 1, updatedAt: time };
      owner = await keys.find(key);
      if (owner !== undefined) {
        // A key that exists costs no allowance.
        const after = now();
        lookups = { tokens: tokensAt(lookups, after, perInstance) + 1, updatedAt: after };
        if (ownTurn) giveBack(allowances, address, perAddress);
      }
    } else if (owner === null) {
      // Known to be unknown (or not shaped like a key): no lookup, but the address pays for it.
      const address = clientAddress(req);
      const error = API_KEY_PATTERN.test(key)
        ? take(allowances, address, perAddress)
          ? undefined
          : refuse(
              perAddress,
              tokensAt(allowances.get(address), now(), perAddress),
              `unknown API keys from this address (at most ${perAddress} a second)`,
            )
        : refuseKeyless(address);
      throw error ?? invalid();
    }
    if (owner === undefined) throw invalid();
    res.locals.apiKey = owner;
    next();
  };
}
