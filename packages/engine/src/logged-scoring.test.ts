import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { buildLogRecord, canonicalBytes, cidOfBytes, type LogRecordStamp } from './log-record.js';
import { scoreAndLog } from './logged-scoring.js';

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
      model_version: 'scorecard-1',
      policy_id: 'DE',
      policy_version: scoring.policy.policy_version,
      subject: 'applicant-1',
      context,
      result: scoring.result,
    });
    expect(canonicalBytes(record)).toEqual(scoring.logBytes);
    expect(scoring.logCid).toBe(cidOfBytes(scoring.logBytes));
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
        result: scoring.result,
      }),
    );
    const wrongSalt = scoreAndLog('applicant-1', context, { ...STAMP, salt: 'B'.repeat(43) }).logBytes;
    expect(leaf(unsalted)).not.toBe(leaf(scoring.logBytes));
    expect(leaf(wrongSalt)).not.toBe(leaf(scoring.logBytes));
  });
});
