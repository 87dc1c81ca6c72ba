import { AppError } from '../errors/app-error.js';
import type { OperationHandler } from '../http/operation-route.js';
import type { LogStore } from './log-store.js';

/**
 * `GET /v1/logs/{cid}`: the record's exact stored bytes, so the client can recompute the CID. Another
 * tenant's record answers 404 like an unknown one, so CIDs reveal nothing.
 */
export function logRoute(logs: Pick<LogStore, 'get'>): OperationHandler<'getLogRecord'> {
  return async (req, res) => {
    const bytes = await logs.get(res.locals.apiKey.tenantId, req.params.cid);
    if (bytes === undefined) {
      throw new AppError('not_found', {
        detail: `No log record with CID ${req.params.cid} exists for this API key.`,
      });
    }
    // Sent as is, never re-serialised: a single changed byte would change the CID.
    res.status(200).setHeader('Content-Type', 'application/json');
    res.end(bytes);
  };
}
