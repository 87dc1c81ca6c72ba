import type { Middleware } from 'openapi-fetch';

/**
 * A random UUID (v4) from `crypto.getRandomValues`, which, unlike `crypto.randomUUID`, browsers also offer
 * on pages that are not served securely. It matches the server's `^[A-Za-z0-9._:-]{1,128}$`, so the
 * server echoes it.
 */
export function randomRequestId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * Middleware that gives each request an `X-Request-Id` unless the caller set one, so a call can be found
 * in the server's logs (the server echoes it, and problems quote it as `request_id`). Retries of a
 * request keep its id.
 */
export function requestIdMiddleware(requestId: () => string = randomRequestId): Middleware {
  return {
    onRequest({ request }) {
      if (!request.headers.has('X-Request-Id')) request.headers.set('X-Request-Id', requestId());
      return request;
    },
  };
}
