import { type Clock, systemClock } from '../common/clock.js';
import { reasonLanguage } from '../http/accept-language.js';
import type { OperationHandler } from '../http/operation-route.js';
import { ownRequestId } from '../http/request-id.js';
import type { Metrics } from '../metrics/metrics.js';
import type { UnknownJurisdictionMode } from '../policies/scoring-policy.js';
import type { ScoreLogStore } from '../score-log/score-log-store.js';
import { traced } from '../tracing/tracing.js';
import { scoreSubject } from './score-service.js';

/**
 * `POST /v1/scoring/score`: the body was validated against the contract before this runs. The reasons'
 * statements follow `Accept-Language` (English by default, never an error), named by `Content-Language`.
 */
export function scoreRoute(
  logs: Pick<ScoreLogStore, 'append'>,
  metrics: Pick<Metrics, 'scores'>,
  clock: Clock = systemClock,
  unknownJurisdiction: UnknownJurisdictionMode = 'default',
): OperationHandler<'scoreSubject'> {
  return async (req, res) => {
    const language = reasonLanguage(req.get('Accept-Language'));
    const caller = {
      tenantId: res.locals.apiKey.tenantId,
      requestId: ownRequestId(res),
      now: clock.now(),
      language,
      unknownJurisdiction,
    };
    const scored = await traced('scoring.score', () => scoreSubject(logs, caller, req.body));
    metrics.scores.inc();
    res.setHeader('Content-Language', language);
    res.vary('Accept-Language');
    res.json(scored);
  };
}
