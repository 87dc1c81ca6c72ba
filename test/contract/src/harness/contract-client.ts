import { createClient, type RetryOptions, type ScoringClient } from '@scenario-scoring/client';
import type { Target } from './targets.js';

/** Options of {@link clientOf}. */
export interface ContractClientOptions {
  /** Another key than the target's default tenant's. */
  apiKey?: string;
  /** Retries are off unless asked for, so that each call shows exactly what the target answered. */
  retries?: RetryOptions;
  /** Headers the client drops before sending, to send a request without them (e.g. Authorization). */
  omitHeaders?: string[];
  /** Called with each request as it is sent (retries included). */
  onSend?: (request: Request) => void;
}

/** A client of the target, as a user creates one. */
export function clientOf(target: Target, options: ContractClientOptions = {}): ScoringClient {
  const { omitHeaders = [], onSend } = options;
  return createClient({
    baseUrl: target.baseUrl,
    apiKey: options.apiKey ?? target.apiKey,
    retries: options.retries ?? false,
    fetch: (request) => {
      let sent = request;
      if (omitHeaders.length > 0) {
        // A Request's own headers are immutable once made; a copy's are not.
        sent = new Request(request);
        for (const name of omitHeaders) sent.headers.delete(name);
      }
      onSend?.(sent);
      return globalThis.fetch(sent);
    },
  });
}

/**
 * Request options that send `text` as the body, byte for byte, instead of serialising a typed body: for
 * bodies the types rightly refuse (non-JSON, arrays, wrong types).
 */
export function rawBody(text: string): { body: never; bodySerializer: () => string } {
  return { body: {} as never, bodySerializer: () => text };
}
