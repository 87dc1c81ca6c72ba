import type { components, ScoreResponse } from '@scenario-scoring/api-types';
import type { Response } from 'express';
import { type Clock, systemClock } from '../common/clock.js';
import { reasonLanguage } from '../http/accept-language.js';
import { sendJson, sendJsonUtf8 } from '../http/json-answer.js';
import type { OperationHandler } from '../http/operation-route.js';
import { parsePreferences, preferredWaitMs } from '../http/prefer-header.js';
import { ownRequestId } from '../http/request-id.js';
import type { Metrics } from '../metrics/metrics.js';
import type { UnknownJurisdictionMode } from '../policies/scoring-policy.js';
import type { ScoreLogStore } from '../score-log/score-log-store.js';
import { traced } from '../tracing/tracing.js';
import { scoreAnswerUtf8, scoreSubject } from './score-service.js';

/** How a scoring asking `Prefer: log-inclusion` gets its proof (the verifiable log, wired by the app). */
export interface InclusionOnRequest {
  /** The longest wait, and the wait when the request names none. */
  maxWaitMs: number;
  /** The record's inclusion proof once it is in a signed checkpoint, or undefined after `waitMs`. */
  await(
    tenantId: string,
    cid: string,
    waitMs: number,
  ): Promise<components['schemas']['InclusionProof'] | undefined>;
}

/**
 * `POST /v1/scoring/score`: the body was validated against the contract before this runs. The reasons'
 * statements follow `Accept-Language` (English by default, never an error), named by `Content-Language`.
 * With `Prefer: log-inclusion` (and `inclusion` wired), the answer waits, bounded, for the record's signed
 * checkpoint and carries `log_inclusion` with `Preference-Applied`; without the header nothing more is done.
 */
export function scoreRoute(
  logs: Pick<ScoreLogStore, 'append'>,
  metrics: Pick<Metrics, 'scores'>,
  clock: Clock = systemClock,
  unknownJurisdiction: UnknownJurisdictionMode = 'default',
  inclusion?: InclusionOnRequest,
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
    const { response: scored, resultUtf8 } = await traced('scoring.score', () =>
      scoreSubject(logs, caller, req.body),
    );
    metrics.scores.inc();
    res.setHeader('Content-Language', language);
    res.vary('Accept-Language');
    const prefer = req.get('Prefer');
    if (prefer !== undefined && inclusion !== undefined) {
      const preferences = parsePreferences(prefer);
      if (preferences.has('log-inclusion')) {
        const waitMs = Math.min(preferredWaitMs(preferences) ?? inclusion.maxWaitMs, inclusion.maxWaitMs);
        const proof = await inclusion.await(caller.tenantId, scored.log_cid, waitMs);
        if (proof !== undefined) {
          res.setHeader('Preference-Applied', 'log-inclusion');
          send(res, { ...scored, log_inclusion: proof }, resultUtf8);
          return;
        }
      }
    }
    send(res, scored, resultUtf8);
  };
}

/** Sends a scoring's answer, written around its result's text when there is one (see `ScoredSubject`). */
function send(res: Response, answer: ScoreResponse, resultUtf8: string | undefined): void {
  if (resultUtf8 === undefined) sendJson(res, answer);
  else sendJsonUtf8(res, scoreAnswerUtf8(answer, resultUtf8), answer);
}
