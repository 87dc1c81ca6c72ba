import { type Clock, systemClock } from '../common/clock.js';
import type { OperationHandler } from '../http/operation-route.js';
import { ownRequestId } from '../http/request-id.js';
import type { Metrics } from '../metrics/metrics.js';
import type { ScoreLogStore } from '../score-log/score-log-store.js';
import { traced } from '../tracing/tracing.js';
import { scoreSubject } from './score-service.js';

/** `POST /v1/scoring/score`: the body was validated against the contract before this runs. */
export function scoreRoute(
  logs: Pick<ScoreLogStore, 'append'>,
  metrics: Pick<Metrics, 'scores'>,
  clock: Clock = systemClock,
): OperationHandler<'scoreSubject'> {
  return async (req, res) => {
    const caller = { tenantId: res.locals.apiKey.tenantId, requestId: ownRequestId(res), now: clock.now() };
    const scored = await traced('scoring.score', () => scoreSubject(logs, caller, req.body));
    metrics.scores.inc();
    res.json(scored);
  };
}
