import createOpenApiClient, { type Client, type Middleware } from 'openapi-fetch';
import type { paths } from './api-types.js';
import { assertApiKey, authMiddleware } from './auth-middleware.js';
import { CLIENT_VERSION } from './client-version.js';
import { requestIdMiddleware } from './request-id-middleware.js';
import { type RetryOptions, retryMiddleware } from './retry-middleware.js';

/** The client: openapi-fetch typed by the contract's `paths`, so every call is checked against it. */
export type ScoringClient = Client<paths>;

/** Options of {@link createClient}. */
export interface ClientOptions {
  /** The server's base address, without `/v1` (for example `https://api.example.com` or the mock's). */
  baseUrl: string;
  /** The API key, `sk_…`. */
  apiKey: string;
  /** The fetch to use; defaults to the global one. Tests inject theirs here. */
  fetch?: (request: Request) => Promise<Response>;
  /** Retry settings; `false` or `{ maxRetries: 0 }` turns retrying off. */
  retries?: RetryOptions | false;
  /** Makes the `X-Request-Id` of a call that did not set one; defaults to a random UUID. */
  requestId?: () => string;
  /** The `User-Agent` to send; outside browsers it defaults to `scenario-scoring-client/<version>`. */
  userAgent?: string;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
  /**
   * openapi-fetch middleware run around every attempt, retries included, after the client's own (the
   * `Authorization` and `X-Request-Id` headers are set): `onRequest` sees each attempt's request,
   * `onResponse` each attempt's response (a 503 that is then retried too), `onError` each network error,
   * before the retry middleware decides whether to retry. For logging, metrics or tracing per attempt. One
   * added later with `client.use(mw)` runs once per call instead, outside the retries: its `onResponse`
   * sees only the first attempt's response.
   */
  middleware?: readonly Middleware[];
}

/** The `User-Agent` sent by default where the runtime lets a script choose it. */
export const DEFAULT_USER_AGENT = `scenario-scoring-client/${CLIENT_VERSION}`;

function assertBaseUrl(baseUrl: unknown): asserts baseUrl is string {
  const page = (globalThis as { location?: { href?: string } }).location?.href;
  if (typeof baseUrl === 'string' && URL.canParse(baseUrl, page)) return;
  throw new TypeError(
    `baseUrl must be the server's address, such as "https://api.example.com"; got ${
      typeof baseUrl === 'string' ? JSON.stringify(baseUrl) : typeof baseUrl
    }.`,
  );
}

/**
 * Creates a client of the scenario-scoring API. Calls return `{ data, response }` or `{ error, response }`,
 * where `error` is the problem the server answered with; only misuse (bad options, a bad apiKey) and
 * network errors throw. Every request carries the API key and an `X-Request-Id`, and is retried on 429 and
 * 503 as `retries` says (see {@link retryMiddleware}).
 *
 * ```ts
 * const client = createClient({ baseUrl: 'https://api.example.com', apiKey: process.env.SCORING_API_KEY! });
 * const { data, error } = await client.POST('/v1/scoring/score', {
 *   body: { subject: 'applicant-42', context: { jurisdiction: 'DE' } },
 * });
 * ```
 */
export function createClient(options: ClientOptions): ScoringClient {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('createClient needs options: { baseUrl, apiKey }.');
  }
  assertBaseUrl(options.baseUrl);
  assertApiKey(options.apiKey);
  if (options.fetch !== undefined && typeof options.fetch !== 'function') {
    throw new TypeError('fetch must be a function.');
  }
  if (
    options.middleware !== undefined &&
    (!Array.isArray(options.middleware) ||
      !options.middleware.every((m) => typeof m === 'object' && m !== null && !Array.isArray(m)))
  ) {
    throw new TypeError('middleware must be an array of openapi-fetch middleware objects.');
  }
  const middleware = options.middleware ?? [];
  const userAgent = options.userAgent ?? (typeof document === 'undefined' ? DEFAULT_USER_AGENT : undefined);
  const client = createOpenApiClient<paths>({
    baseUrl: options.baseUrl,
    // Looked up per call, not captured, so that a fetch patched after creation (by tracing tools) is used.
    fetch: options.fetch ?? ((request) => globalThis.fetch(request)),
    headers: { ...(userAgent === undefined ? {} : { 'User-Agent': userAgent }), ...options.headers },
  });
  client.use(authMiddleware(options.apiKey), requestIdMiddleware(options.requestId));
  // Last, so that it re-sends the request with every header the others set; the caller's middleware runs
  // inside it, around each attempt.
  if (options.retries !== false) client.use(retryMiddleware(options.retries, middleware));
  else if (middleware.length > 0) client.use(...middleware);
  return client;
}
