import type { Middleware } from 'openapi-fetch';

/** The shape of an API key: `sk_` and at least 32 base62 characters (the server issues 40). */
export const API_KEY_PATTERN = /^sk_[0-9A-Za-z]{32,}$/;

/**
 * Throws a TypeError unless `apiKey` has the shape of an API key. The message never repeats the key,
 * so that a misplaced secret does not end up in logs.
 */
export function assertApiKey(apiKey: unknown): asserts apiKey is string {
  if (typeof apiKey === 'string' && API_KEY_PATTERN.test(apiKey)) return;
  const got =
    typeof apiKey === 'string'
      ? `a string of ${apiKey.length} characters${apiKey.startsWith('sk_') ? '' : ' not starting with "sk_"'}`
      : typeof apiKey;
  throw new TypeError(
    `apiKey must be an API key: "sk_" followed by at least 32 letters or digits; got ${got}.`,
  );
}

/**
 * Middleware that sends `Authorization: Bearer <apiKey>`, unless the request already carries an
 * `Authorization` header (so one call can use another key).
 */
export function authMiddleware(apiKey: string): Middleware {
  assertApiKey(apiKey);
  const authorization = `Bearer ${apiKey}`;
  return {
    onRequest({ request }) {
      if (!request.headers.has('Authorization')) request.headers.set('Authorization', authorization);
      return request;
    },
  };
}
