import type { OperationHandler } from '../http/operation-route.js';
import { readLogRecord } from './score-log-service.js';
import type { ScoreLogStore } from './score-log-store.js';

/** `GET /v1/logs/{cid}`: the record's exact stored bytes, or 404 (see score-log-service.ts). */
export function logRoute(logs: Pick<ScoreLogStore, 'get' | 'erasedBy'>): OperationHandler<'getLogRecord'> {
  return async (req, res) => {
    const bytes = await readLogRecord(logs, res.locals.apiKey.tenantId, req.params.cid);
    // Sent as is, never re-serialised: a single changed byte would change the CID.
    res.status(200).setHeader('Content-Type', 'application/json');
    // Explicit, so a HEAD tells the record's size too (Node leaves it out of a body it does not send).
    res.setHeader('Content-Length', String(bytes.byteLength));
    res.end(bytes);
  };
}
