import { describe, expect, it } from 'vitest';
import { canonicalBytes, cidOfBytes } from './log-record.js';
import { scoreAndLog } from './logged-scoring.js';

describe('scoreAndLog', () => {
  it('when a subject is scored, then its log record holds the input and result under the policy version', () => {
    const context = { jurisdiction: 'DE', utilization: 0.35 };
    const scoring = scoreAndLog('applicant-1', context);
    const record = JSON.parse(new TextDecoder().decode(scoring.logBytes));
    expect(record).toEqual({
      schema: 'score-log/1',
      model_version: 'scorecard-1',
      policy_version: scoring.policy.policy_version,
      subject: 'applicant-1',
      context,
      result: scoring.result,
    });
    expect(scoring.policy.policy_id).toBe('DE');
    expect(canonicalBytes(record)).toEqual(scoring.logBytes);
    expect(scoring.logCid).toBe(cidOfBytes(scoring.logBytes));
  });

  it('when only the subject differs, then the CID differs', () => {
    const context = { jurisdiction: 'FR' };
    expect(scoreAndLog('a', context).logCid).not.toBe(scoreAndLog('b', context).logCid);
  });
});
