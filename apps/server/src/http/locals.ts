import type { ApiKeyOwner } from '../keys/api-key-store.js';
import type { RequestTrace } from '../tracing/tracing.js';

declare global {
  namespace Express {
    /** What the server's middleware records about a request, read by later middleware and handlers. */
    interface Locals {
      /** The `X-Request-Id` of the response: the client's valid one, or a new `req_` id. */
      requestId: string;
      /** True when `requestId` was made here, so it is a `req_` id. */
      requestIdGenerated: boolean;
      /** Who the request's API key belongs to; set by the auth middleware on `/v1/` routes. */
      apiKey: ApiKeyOwner;
      /** The contract's operationId of the request, when it matches one (set before auth). */
      operationId: string | undefined;
      /** `performance.now()` when the request arrived, for its logged and measured duration. */
      startedAt: number;
      /** The request came as HEAD and is served as its GET without a body (see http/head-requests.ts). */
      head?: true;
      /** The request's span ids, when tracing is on (tracing/tracing.ts). */
      trace?: RequestTrace;
    }
  }
}
