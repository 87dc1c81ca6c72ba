import { reasonLanguage } from '../http/accept-language.js';
import type { OperationHandler } from '../http/operation-route.js';
import { noticeOf } from './notice.js';
import { NOTICE_PAGE_CSP, noticePage } from './notice-page.js';
import { readLogRecord } from './score-log-service.js';
import type { ScoreLogStore } from './score-log-store.js';

/**
 * `GET /v1/logs/{cid}/notice`: the record's notice, as JSON or (`Accept: text/html`) a printable page, in
 * the language of `Accept-Language` (English by default). The record is read as `GET /v1/logs/{cid}` reads
 * it: another tenant's is 404, an erased one 410 `log_record_erased`.
 */
export function noticeRoute(logs: Pick<ScoreLogStore, 'get' | 'erasedBy'>): OperationHandler<'getNotice'> {
  return async (req, res) => {
    const { cid } = req.params;
    const bytes = await readLogRecord(logs, res.locals.apiKey.tenantId, cid);
    const language = reasonLanguage(req.get('Accept-Language'));
    const notice = noticeOf(cid, bytes, language);
    res.setHeader('Content-Language', language);
    res.vary('Accept-Language');
    res.vary('Accept');
    if (req.accepts(['application/json', 'text/html']) === 'text/html') {
      const page = Buffer.from(noticePage(notice), 'utf8');
      res.status(200).setHeader('Content-Type', 'text/html; charset=utf-8');
      res.setHeader('Content-Security-Policy', NOTICE_PAGE_CSP);
      res.setHeader('Content-Length', String(page.byteLength));
      res.end(page);
      return;
    }
    res.json(notice);
  };
}
