import type { Request } from 'express';

/** The codes of a request stream that ended because its client went away. */
const ABORT_CODES = new Set(['ECONNABORTED', 'ECONNRESET', 'ERR_STREAM_PREMATURE_CLOSE', 'EPIPE']);

/** The status logged and counted for a request its client abandoned (nginx's "client closed request"): not a 5xx. */
export const CLIENT_CLOSED_REQUEST = 499;

/**
 * Whether `error` only says the client dropped the request (mid-body, or cut off by Node's request
 * timeout): body-parser tags that `request.aborted`; a reset socket shows as ECONNRESET. Not a server
 * failure: logged at info, never counted as a 5xx.
 */
export function isClientAbort(error: unknown, req: Request): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { type, code } = error as { type?: unknown; code?: unknown };
  if (type === 'request.aborted') return true;
  return typeof code === 'string' && ABORT_CODES.has(code) && (req.destroyed || req.socket.destroyed);
}
