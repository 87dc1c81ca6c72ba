import type { RequestHandler } from 'express';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { AppError } from '../errors/app-error.js';
import { API_KEY_PATTERN } from '../keys/api-key.js';
import type { ApiKeyOwner, ApiKeyStore } from '../keys/api-key-store.js';
import { clientAddress } from './client-address.js';
import { secondsLeft } from './rate-limit.js';

const CHALLENGE = { 'WWW-Authenticate': 'Bearer realm="scenario-scoring"' };
const BEARER_PREFIX_LENGTH = 'bearer '.length;

/** Keys that turn out unknown, per client address, in each one-second window. */
export const UNKNOWN_KEYS_PER_SECOND = 20;
/** Database lookups that find no key, on this instance from every address together, in each one-second window. */
export const UNKNOWN_KEY_LOOKUPS_PER_SECOND = 200;
/** Requests without a key, or with one not shaped like a key, per client address, in each one-second window. */
export const KEYLESS_REQUESTS_PER_SECOND = 20;
const INSTANCE = 'instance';

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
 * Every allowance is a fixed one-second window (rate-limiter-flexible's `RateLimiterMemory`; an address
 * is forgotten when its window ends).
 */
export function authenticate(
  keys: Pick<ApiKeyStore, 'find' | 'findCached'>,
  options: {
    unknownKeysPerSecond?: number;
    unknownKeyLookupsPerSecond?: number;
    keylessPerSecond?: number;
  } = {},
): RequestHandler {
  const perAddress = options.unknownKeysPerSecond ?? UNKNOWN_KEYS_PER_SECOND;
  const perInstance = options.unknownKeyLookupsPerSecond ?? UNKNOWN_KEY_LOOKUPS_PER_SECOND;
  const keylessPerSecond = options.keylessPerSecond ?? KEYLESS_REQUESTS_PER_SECOND;
  // Each address's allowance of unknown keys, and of requests without a (well-formed) key; the
  // instance's allowance of lookups that may miss.
  const allowances = new RateLimiterMemory({ points: perAddress, duration: 1 });
  const keyless = new RateLimiterMemory({ points: keylessPerSecond, duration: 1 });
  const lookups = new RateLimiterMemory({ points: perInstance, duration: 1 });

  /** Takes one from `key`'s allowance: the count after it, which is past `points` when refused. */
  const take = (limiter: RateLimiterMemory, key: string): Promise<RateLimiterRes> =>
    limiter.consume(key).catch((rejection: unknown) => {
      if (rejection instanceof RateLimiterRes) return rejection;
      throw rejection;
    });
  const refused = (limiter: RateLimiterMemory, taken: RateLimiterRes) =>
    taken.consumedPoints > limiter.points;
  const refuse = (taken: RateLimiterRes, what: string) => {
    const retryAfter = secondsLeft(taken);
    return new AppError('rate_limited', {
      detail: `Too many ${what}; retry in ${retryAfter} s.`,
      headers: { 'Retry-After': String(retryAfter) },
    });
  };
  const unknownFromAddress = `unknown API keys from this address (at most ${perAddress} a second)`;
  /** The lookups under way, by address and key: a request whose key is being looked up waits for that lookup. */
  const lookingUp = new Map<string, Promise<ApiKeyOwner | undefined>>();
  const refuseKeyless = async (address: string) => {
    const taken = await take(keyless, address);
    if (!refused(keyless, taken)) return undefined;
    return refuse(
      taken,
      `requests without a valid API key from this address (at most ${keylessPerSecond} a second)`,
    );
  };
  const invalid = () =>
    new AppError('invalid_api_key', {
      detail: 'The API key is not valid: mistyped, revoked or from another deployment.',
      headers: CHALLENGE,
    });

  /**
   * A key not cached: takes from the instance's and the address's allowances (so concurrent lookups are
   * bounded too), refuses past them, else looks the key up; a key that exists costs no allowance.
   */
  const chargeAndFind = async (key: string, address: string): Promise<ApiKeyOwner | undefined> => {
    const instance = await take(lookups, INSTANCE);
    if (refused(lookups, instance))
      throw refuse(instance, `unknown API keys (at most ${perInstance} a second are looked up)`);
    const own = await take(allowances, address);
    const ownTurn = !refused(allowances, own);
    // Past its own allowance, an address is still looked up while more than half the instance's is left.
    if (!ownTurn && instance.remainingPoints < perInstance / 2) {
      await lookups.reward(INSTANCE);
      throw refuse(own, unknownFromAddress);
    }
    const owner = await keys.find(key);
    if (owner !== undefined) {
      await lookups.reward(INSTANCE);
      if (ownTurn) await allowances.reward(address);
    }
    return owner;
  };

  /** Every case but a cached key: a limit, a lookup or a refusal, each of which may wait. */
  const authenticateSlowly = async (
    req: Parameters<RequestHandler>[0],
    res: Parameters<RequestHandler>[1],
    next: Parameters<RequestHandler>[2],
    header: string | undefined,
  ) => {
    // The scheme is case-insensitive (RFC 9110 §11.1); Node trims the value, so a key is never empty.
    if (header === undefined || header.slice(0, BEARER_PREFIX_LENGTH).toLowerCase() !== 'bearer ') {
      throw (
        (await refuseKeyless(clientAddress(req))) ??
        new AppError('missing_api_key', {
          detail: 'Send your API key as "Authorization: Bearer sk_…".',
          headers: CHALLENGE,
        })
      );
    }
    const key = header.slice(BEARER_PREFIX_LENGTH);
    let owner = keys.findCached(key);
    if (owner === undefined) {
      // One lookup at a time per key and address: a request whose key is being looked up already for its
      // address (a client's first burst after a restart) waits for that lookup and its answer (a refusal
      // of that address included), and costs the address no allowance more. Per address, so one address's
      // refusal is never another's. Registered before anything is awaited, so a burst finds it.
      const address = clientAddress(req);
      const pending = `${address}\n${key}`;
      let lookup = lookingUp.get(pending);
      if (lookup === undefined) {
        lookup = chargeAndFind(key, address);
        lookingUp.set(pending, lookup);
        const settled = () => {
          if (lookingUp.get(pending) === lookup) lookingUp.delete(pending);
        };
        lookup.then(settled, settled);
      }
      owner = await lookup;
    } else if (owner === null) {
      // Known to be unknown (or not shaped like a key): no lookup, but the address pays for it.
      const address = clientAddress(req);
      if (!API_KEY_PATTERN.test(key)) throw (await refuseKeyless(address)) ?? invalid();
      const taken = await take(allowances, address);
      throw refused(allowances, taken) ? refuse(taken, unknownFromAddress) : invalid();
    }
    if (owner === undefined) throw invalid();
    res.locals.apiKey = owner;
    next();
  };

  // A key found recently (nearly every request) passes at once: no promise, no wait for the microtask queue.
  return (req, res, next) => {
    const header = req.headers.authorization;
    if (header !== undefined && header.slice(0, BEARER_PREFIX_LENGTH).toLowerCase() === 'bearer ') {
      const owner = keys.findCached(header.slice(BEARER_PREFIX_LENGTH));
      if (owner) {
        res.locals.apiKey = owner;
        return next();
      }
    }
    return authenticateSlowly(req, res, next, header);
  };
}
