import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { buildLogRecord, canonicalBytes, cidOfBytes, type LogRecordStamp } from './log-record.js';
import { scoreAndLog } from './logged-scoring.js';
import { effectivePolicy } from './policy-loader.js';
import { restateReasons } from './reason-finder.js';
import { scoreContext, scoreScorecard2 } from './scorecard-model.js';

const STAMP: LogRecordStamp = {
  identity: { kind: 'score', request_id: 'req_01JZ4V8Q6Y3M2N5P7R9S1T3V5X' },
  scored_at: '2026-11-26T12:00:00.000Z',
  salt: 'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8',
};
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

describe('scoreAndLog', () => {
  it('when a subject is scored, then its score-log/2 record holds the stamp, policy, input and result', () => {
    const context = { jurisdiction: 'DE', utilization: 0.35 };
    const scoring = scoreAndLog('applicant-1', context, STAMP);
    const record = JSON.parse(text(scoring.logBytes));
    expect(record).toEqual({
      schema: 'score-log/2',
      kind: 'score',
      request_id: 'req_01JZ4V8Q6Y3M2N5P7R9S1T3V5X',
      scored_at: '2026-11-26T12:00:00.000Z',
      salt: STAMP.salt,
      model_version: 'scorecard-2',
      policy_id: 'DE',
      policy_version: scoring.policy.policy_version,
      subject: 'applicant-1',
      context,
      result: scoring.result,
    });
    expect(canonicalBytes(record)).toEqual(scoring.logBytes);
    expect(scoring.logCid).toBe(cidOfBytes(scoring.logBytes));
  });

  it('when a subject is scored, then the record commits its scorecard-2 reasons in English, as the page gives them', () => {
    // utilization 0.45: x = 1 − 0.45 / 0.9 = 0.5, d = 300 · 0.5 = 150; every other input missing (x = 0.5):
    // d = 350 · 0.5 = 175 (PH0), 150 · 0.5 = 75 (HL0), 100 · 0.5 = 50 (DI0, RI0). Four, then RI0 fifth.
    const context = { jurisdiction: 'FR', utilization: 0.45 };
    const scoring = scoreAndLog('applicant-2', context, STAMP);
    const record = JSON.parse(text(scoring.logBytes));
    expect(record.model_version).toBe('scorecard-2');
    expect(record.result.reasons).toEqual([
      {
        code: 'PH0',
        factor: 'payment_history',
        rank: 1,
        points_below_max: 175,
        statement: 'Not enough information about payment history',
      },
      {
        code: 'UT1',
        factor: 'utilization',
        rank: 2,
        points_below_max: 150,
        statement: 'Too much of the available credit is in use',
        lever: 'utilization',
      },
      {
        code: 'HL0',
        factor: 'history_length',
        rank: 3,
        points_below_max: 75,
        statement: 'Not enough information about the length of credit history',
      },
      {
        code: 'DI0',
        factor: 'debt_to_income',
        rank: 4,
        points_below_max: 50,
        statement: 'Not enough information about debt and income',
      },
      {
        code: 'RI0',
        factor: 'recent_inquiries',
        rank: 5,
        points_below_max: 50,
        statement: 'Not enough information about recent applications for credit',
      },
    ]);
    expect(text(scoring.logBytes)).toContain(
      '"reasons":[{"code":"PH0","factor":"payment_history","points_below_max":175,"rank":1,',
    );
    expect(canonicalBytes(record)).toEqual(scoring.logBytes);
  });

  it('when a policy is given, then the scoring uses it and the record names it', () => {
    const policy = effectivePolicy('ZZ');
    const scoring = scoreAndLog('a', { jurisdiction: 'DE' }, STAMP, policy);
    expect(JSON.parse(text(scoring.logBytes)).policy_id).toBe('default');
    expect(scoring.result).toEqual(scoreScorecard2({ jurisdiction: 'DE' }, policy));
    expect(restateReasons(scoring.result.reasons, 'de')[0]?.statement).not.toBe(
      scoring.result.reasons[0]?.statement,
    );
  });

  it('when a run item is scored, then its record names the run and the item, not a request', () => {
    const identity = { kind: 'run_item', run_id: 'run_01JZ4VB2C4D6E8F0G2H4J6K8M0', item: 7 } as const;
    const scoring = scoreAndLog('applicant-1', { jurisdiction: 'ZZ' }, { ...STAMP, identity });
    const record = JSON.parse(text(scoring.logBytes));
    expect(record).toMatchObject({
      kind: 'run_item',
      run_id: identity.run_id,
      item: 7,
      policy_id: 'default',
    });
    expect(record).not.toHaveProperty('request_id');
    expect(text(scoring.logBytes)).toMatch(/^\{"context":\{[^}]*\},"item":7,"kind":"run_item",/);
  });

  it('when the same scoring is stamped with another salt, time or request, then its CID differs', () => {
    const context = { jurisdiction: 'FR', utilization: 0.2 };
    const cids = [
      scoreAndLog('a', context, STAMP),
      scoreAndLog('a', context, { ...STAMP, salt: 'x'.repeat(43) }),
      scoreAndLog('a', context, { ...STAMP, scored_at: '2026-11-26T12:00:00.001Z' }),
      scoreAndLog('a', context, { ...STAMP, identity: { kind: 'score', request_id: 'req_other' } }),
      scoreAndLog('b', context, STAMP),
    ].map((scoring) => scoring.logCid);
    expect(new Set(cids).size).toBe(cids.length);
    expect(scoreAndLog('a', context, STAMP).logCid).toBe(cids[0]);
  });

  it('when someone guesses the input without the salt, then neither the score-log/1 form nor a wrong salt gives the leaf', () => {
    const context = { jurisdiction: 'DE', utilization: 0.35 };
    const scoring = scoreAndLog('applicant-1', context, STAMP);
    const leaf = (bytes: Uint8Array) =>
      createHash('sha256')
        .update(Buffer.from([0]))
        .update(bytes)
        .digest('hex');
    const unsalted = canonicalBytes(
      buildLogRecord({
        policy_version: scoring.policy.policy_version,
        subject: 'applicant-1',
        context,
        result: scoreContext(context, scoring.policy),
      }),
    );
    const wrongSalt = scoreAndLog('applicant-1', context, { ...STAMP, salt: 'B'.repeat(43) }).logBytes;
    expect(leaf(unsalted)).not.toBe(leaf(scoring.logBytes));
    expect(leaf(wrongSalt)).not.toBe(leaf(scoring.logBytes));
  });
});
