import { performance } from 'node:perf_hooks';
import { Agent, type Dispatcher, request } from 'undici';
import { SERVER_VERSION } from '../../common/server-version.js';
import { webhookHeaders } from '../outbound/webhook-signature.js';
import type { AttemptResult } from './retry-schedule.js';
import { type StorableText, storableFromBytes, storableString } from './storable-text.js';

/** The `user-agent` of every delivery. */
export const WEBHOOK_USER_AGENT = `scenario-scoring-webhooks/${SERVER_VERSION}`;
/**
 * How much of a response body an attempt keeps: 1 KiB, as delivery platforms do, so that 50 endpoints
 * answering large bodies, ten attempts each, never multiply what one event stores.
 */
export const RESPONSE_BODY_LIMIT_BYTES = 1024;
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
  /** The W3C `traceparent` of the attempt's span, sent when tracing is on (see tracing/tracing.ts). */
  traceparent?: string;
}

/** What an attempt came to, with what the attempt list shows of it. */
export interface SentAttempt extends AttemptResult {
  durationMs: number;
  /** The first 1 KiB of the response body, as text; null when no response came. */
  responseBody: string | null;
  /** Whether bytes of the body were replaced to store it (invalid UTF-8, NUL). */
  responseBodyReplaced?: boolean;
  /** Whether the body was longer than RESPONSE_BODY_LIMIT_BYTES, so only its start is kept. */
  responseBodyTruncated?: boolean;
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
          ...(delivery.traceparent !== undefined && { traceparent: delivery.traceparent }),
        },
        body: delivery.payload,
      });
      const {
        text: responseBody,
        replaced: responseBodyReplaced,
        truncated: responseBodyTruncated,
      } = await readPrefix(response.body);
      const statusCode = response.statusCode;
      // HTTP has no status above 599 (RFC 9110 §15): such an answer is no valid response at all.
      if (statusCode > 599) {
        return {
          statusCode: 0,
          error: `invalid_response: status ${statusCode} is outside 100-599`,
          durationMs: elapsed(),
          responseBody,
          responseBodyReplaced,
          responseBodyTruncated,
        };
      }
      const retryAfter = response.headers['retry-after'];
      return {
        statusCode,
        error: statusError(statusCode),
        retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
        durationMs: elapsed(),
        responseBody,
        responseBodyReplaced,
        responseBodyTruncated,
      };
    } catch (error) {
      return { statusCode: 0, error: networkError(error, signal), durationMs: elapsed(), responseBody: null };
    }
  };
}

/**
 * Reads the first RESPONSE_BODY_LIMIT_BYTES of a body; a longer body is cut (and its connection closed),
 * and said to be (`truncated`).
 * With the stream's events, not `for await`: an async iterator per response cost about as much as the
 * rest of reading it. Settles once: on the end, at the limit, on an error (a timeout's abort included),
 * or on a close that came without an end.
 */
function readPrefix(body: Dispatcher.ResponseData['body']): Promise<StorableText & { truncated: boolean }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    let settled = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      body.off('data', onData);
      // A multi-byte character cut at the limit decodes to U+FFFD: still at most 1024 characters. NUL
      // becomes U+FFFD as well (PostgreSQL refuses it, which failed every outcome of the batch). One byte
      // past the limit is read, so a body of exactly the limit is not called truncated.
      const stored = storableFromBytes(Buffer.concat(chunks, length).subarray(0, RESPONSE_BODY_LIMIT_BYTES));
      resolve({ ...stored, truncated: length > RESPONSE_BODY_LIMIT_BYTES });
    };
    const fail = (error: unknown) => {
      if (settled) return;
      settled = true;
      body.off('data', onData);
      reject(error);
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      length += chunk.length;
      if (length > RESPONSE_BODY_LIMIT_BYTES) {
        finish();
        body.destroy();
      }
    };
    body.on('data', onData);
    body.once('end', finish);
    // Stays attached after settling: an error emitted later (the cut body's) must not go unhandled.
    body.on('error', fail);
    // Every body closes, after its end too: the error (and its stack trace) only when it is one.
    body.once('close', () => {
      if (!settled) fail(new Error('the response body closed before its end'));
    });
  });
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
  // undici asserts on a 1xx final answer (a 101 it did not ask for, a status below 100): say what it was.
  if (code === 'ERR_ASSERTION') return 'invalid_response: an informational (1xx) or malformed status line';
  // A 101 that names an upgrade: undici refuses it as a "bad upgrade" (found by the hostile-receiver suite).
  if (code === 'UND_ERR_SOCKET' && /upgrade/i.test(failure.message ?? failure.cause?.message ?? ''))
    return 'invalid_response: a protocol switch (101) that was not asked for';
  const message = failure.cause?.message ?? failure.message ?? String(error);
  return storableString((code ? `${code}: ${message}` : message).slice(0, ERROR_TEXT_LIMIT));
}
