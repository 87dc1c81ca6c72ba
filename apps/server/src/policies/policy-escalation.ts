import { escalationReasons, type LoggedScoring } from '@scenario-scoring/engine';
import { type EventData, newEvent, type OutboxEvent } from '../events/event-outbox.js';

/** Where a scoring came from: a synchronous request, or an item of a run. */
export type ScoringOrigin =
  | { requestId: string; runId?: undefined }
  | { runId: string; requestId?: undefined };

/**
 * The `policy.escalated` event of a scoring, or undefined when its policy does not escalate it: p50 below
 * the policy's `review_threshold`, or p90 − p10 wider than its `max_band`; one event lists every reason.
 */
export function escalationEvent(
  tenantId: string,
  subject: string,
  scoring: LoggedScoring,
  origin: ScoringOrigin,
  now: Date,
): OutboxEvent | undefined {
  const { policy, result } = scoring;
  const reasons = escalationReasons(result, policy);
  if (reasons.length === 0) return undefined;
  const [p10, p50, p90] = result.scenarios;
  const data: EventData<'policy.escalated'> = {
    subject,
    jurisdiction: policy.jurisdiction,
    policy_id: policy.policy_id,
    policy_version: policy.policy_version,
    reasons,
    scores: { p10: p10.score, p50: p50.score, p90: p90.score },
    // The scoring's own reasons, as its record holds them (English). history_length has no lever (not
    // actionable): the narrowing gives the contract's lever names.
    score_reasons: result.reasons.map(({ lever, ...reason }) =>
      lever === undefined || lever === 'history_length' ? reason : { ...reason, lever },
    ),
    log_cid: scoring.logCid,
    request_id: origin.requestId ?? null,
    run_id: origin.runId ?? null,
  };
  return newEvent(tenantId, 'policy.escalated', data, now);
}
