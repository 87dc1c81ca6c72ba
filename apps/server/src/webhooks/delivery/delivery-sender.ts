import { performance } from 'node:perf_hooks';
import { Agent, type Dispatcher, request } from 'undici';
import { webhookHeaders } from '../outbound/webhook-signature.js';
import type { AttemptResult } from './retry-schedule.js';

/** The `user-agent` of every delivery. */
export const WEBHOOK_USER_AGENT = 'scenario-scoring-webhooks/0.1.0';
/** How much of a response body an attempt keeps. */
export const RESPONSE_BODY_LIMIT_BYTES = 4096;
const ERROR_TEXT_LIMIT = 1024;

/** One attempt to make: where, what, and the secrets to sign it with (current first). */
export interface DeliveryRequest {
  url: string;
  eventId: string;
  /** The event's stored payload, sent byte for byte. */
  payload: string;
  secrets: readonly string[];
  /** The attempt's own time, Unix seconds: the `webhook-timestamp`. */
  timestampSeconds: number;
}

/** What an attempt came to, with what the attempt list shows of it. */
export interface SentAttempt extends AttemptResult {
  durationMs: number;
  /** The first 4 KB of the response body, as text; null when no response came. */
  responseBody: string | null;
}

/** Sends one attempt; never throws (a network error is an attempt with status 0). */
export type DeliverySender = (delivery: DeliveryRequest) => Promise<SentAttempt>;

/**
 * The connection pool deliveries go through: every phase (connect, headers, body) bounded by `timeoutMs`.
 * Redirects are never followed: undici's `request` only follows them through the redirect interceptor,
 * which is not installed.
 */
export function createDeliveryAgent(timeoutMs: number, connect: Agent.Options['connect'] = {}): Agent {
  return new Agent({
    // A connector function (the checked one) brings its own connect timeout.
    connect: typeof connect === 'function' ? connect : { timeout: timeoutMs, ...connect },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    keepAliveTimeout: 4_000,
  });
}

/**
 * A sender posting signed Standard Webhooks requests through `dispatcher`. The dispatcher is the seam for
 * outbound safety: give it an Agent whose `connect.lookup` refuses non-public addresses and pins the
 * connection to the checked one. A 2xx is success only when it arrives, with its body, within `timeoutMs`.
 */
export function createDeliverySender(options: { timeoutMs: number; dispatcher: Dispatcher }): DeliverySender {
  return async (delivery) => {
    const started = performance.now();
    const elapsed = () => Math.min(Math.round(performance.now() - started), 60_000);
    const signal = AbortSignal.timeout(options.timeoutMs);
    try {
      const response = await request(delivery.url, {
        method: 'POST',
        dispatcher: options.dispatcher,
        signal,
        headers: {
          'content-type': 'application/json',
          'user-agent': WEBHOOK_USER_AGENT,
          ...webhookHeaders(delivery.secrets, delivery.eventId, delivery.timestampSeconds, delivery.payload),
        },
        body: delivery.payload,
      });
      const responseBody = await readPrefix(response.body);
      const statusCode = response.statusCode;
      const retryAfter = response.headers['retry-after'];
      return {
        statusCode,
        error: statusError(statusCode),
        retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
        durationMs: elapsed(),
        responseBody,
      };
    } catch (error) {
      return { statusCode: 0, error: networkError(error, signal), durationMs: elapsed(), responseBody: null };
    }
  };
}

/** Reads the first RESPONSE_BODY_LIMIT_BYTES of a body; a longer body is cut (and its connection closed). */
async function readPrefix(body: Dispatcher.ResponseData['body']): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    length += chunk.length;
    if (length >= RESPONSE_BODY_LIMIT_BYTES) {
      body.destroy();
      break;
    }
  }
  // A multi-byte character cut at the limit decodes to U+FFFD: still at most 4096 characters.
  return Buffer.concat(chunks).subarray(0, RESPONSE_BODY_LIMIT_BYTES).toString('utf8');
}

function statusError(statusCode: number): string | null {
  if (statusCode >= 200 && statusCode < 300) return null;
  if (statusCode >= 300 && statusCode < 400) return 'redirect';
  return `HTTP ${statusCode}`;
}

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** `timeout`, or the connection error's code and message (never more than the contract's 1024 characters). */
function networkError(error: unknown, signal: AbortSignal): string {
  const failure = error as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = failure.code ?? failure.cause?.code;
  if (signal.aborted || (code !== undefined && TIMEOUT_CODES.has(code))) return 'timeout';
  const message = failure.cause?.message ?? failure.message ?? String(error);
  return (code ? `${code}: ${message}` : message).slice(0, ERROR_TEXT_LIMIT);
}
